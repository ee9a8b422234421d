"""Per-sender rate limit: at most ``limit`` messages in each fixed window of ``window``
seconds, counted in the gateway's database so a restart does not reset it."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from openheim.gateway.state import GatewayState


@dataclass(frozen=True)
class Verdict:
    """Whether a message may pass; when not, the seconds until the window ends, and whether
    this is the first message refused in the window (the one to answer)."""

    allowed: bool
    retry_in: float = 0.0
    first_refusal: bool = False


class RateLimiter:
    """Fixed-window counting per platform and sender."""

    def __init__(
        self,
        state: GatewayState,
        limit: int,
        window: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self._limit = limit
        self._window = window
        self._clock = clock

    async def check(self, platform: str, sender: str) -> Verdict:
        """Count one message of the sender (in the state, off the event loop), and say
        whether it is within the limit."""
        now = self._clock()
        start = math.floor(now / self._window) * self._window
        count = await self._state.off_loop(self._state.count, platform, sender, start)
        if count <= self._limit:
            return Verdict(True)
        return Verdict(False, start + self._window - now, count == self._limit + 1)
