"""Who may talk to the agent: an allow-list of sender ids per platform, and optionally a
passphrase a sender sends as ``/auth PHRASE`` to be admitted; each admission is stored (it
survives restarts) until ``openheim gateway --revoke`` takes it back."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from openheim.gateway.state import GatewayState


class Authoriser:
    """Decides whether a sender is admitted; admits one by the passphrase."""

    def __init__(
        self,
        allowed: Mapping[str, frozenset[str]],
        passphrase: str | None,
        state: GatewayState,
    ) -> None:
        self._allowed = allowed
        self._passphrase = passphrase.encode() if passphrase else None
        self._state = state

    @property
    def has_passphrase(self) -> bool:
        return self._passphrase is not None

    async def admitted(self, platform: str, sender: str) -> bool:
        """On the platform's allow-list, or admitted by the passphrase before (asked of the
        state off the event loop)."""
        if sender in self._allowed.get(platform, frozenset()):
            return True
        return await self._state.off_loop(self._state.granted, platform, sender)

    async def try_passphrase(self, platform: str, sender: str, phrase: str) -> bool:
        """Admit the sender when ``phrase`` is the passphrase (compared in constant time)."""
        if self._passphrase is None:
            return False
        if not hmac.compare_digest(phrase.strip().encode(), self._passphrase):
            return False
        await self._state.off_loop(self._state.grant, platform, sender)
        return True
