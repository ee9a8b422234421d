"""The one record every platform's message becomes, and what a platform client offers the
pipeline: a receive loop that delivers records, and a send for one reply chunk."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypeGuard

_NUMERIC_ID = re.compile(r"[0-9]{1,24}")


def numeric_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is an id as Discord (snowflake) and WhatsApp (phone number) write
    them: a string of digits. Ids go into conversation keys and URL paths, so any other is
    refused (allow-list)."""
    return isinstance(value, str) and _NUMERIC_ID.fullmatch(value) is not None


def token_digest(token: str) -> str:
    """A bot's identity where its platform gives none that is public: a short digest of its
    token (which names the bot without revealing the token)."""
    return "sha256-" + hashlib.sha256(token.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Inbound:
    """One chat message, whatever platform it came from.

    ``message_id`` identifies the delivery on its platform (a redelivery carries the same one),
    ``channel`` is where the reply goes (a chat, a channel, a phone number) and ``reply_to``
    the platform's id of the message the reply answers, where the platform threads replies.
    ``private`` is true only for a chat between the sender and the bot alone (a Telegram chat of
    type ``private``, a Discord direct message, a WhatsApp chat): ``/auth`` is taken only
    there, since elsewhere others would read the passphrase."""

    platform: str
    message_id: str
    sender: str
    channel: str
    text: str
    reply_to: str | None = None
    private: bool = False

    @property
    def key(self) -> str:
        """The conversation this message belongs to: platform, sender and channel."""
        return f"{self.platform}:{self.sender}:{self.channel}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> Inbound:
        data = json.loads(raw)
        fields = {k: data.get(k) for k in cls.__dataclass_fields__}
        return cls(**{**fields, "private": fields["private"] is True})


Deliver = Callable[[Inbound], Awaitable[None]]
"""Hands one inbound message to the pipeline; it returns once the message is stored, so a
platform may acknowledge it then."""


class Platform(Protocol):
    """A chat platform's client, as the pipeline sees it."""

    name: str
    bot_id: str
    """Which bot of the platform this client is, never secret: the gateway's leader lease
    (and Telegram's update offset) is kept per bot, so bots of one platform sharing a store
    each have their own."""

    async def receive(self, deliver: Deliver) -> None:
        """Deliver each inbound message until cancelled (a webhook platform returns at once:
        its deliveries arrive through the webhook app)."""
        ...

    def webhook_routes(self, deliver: Deliver) -> list[Any]:
        """The routes of the webhook app this platform pushes to (none for a client that
        polls or holds a connection)."""
        ...

    async def send(self, to: Inbound, text: str) -> None:
        """Send one chunk of a reply to ``to``'s channel (already formatted and split)."""
        ...

    async def delete(self, message: Inbound) -> None:
        """Delete ``message`` from its chat where the platform lets the bot (raises
        PlatformError when it is refused; does nothing where the platform has no way)."""
        ...

    async def aclose(self) -> None:
        """Release the client's connections."""
        ...
