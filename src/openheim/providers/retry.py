"""Retry: one wrapper shared by every provider.

A failed call is tried again when the error is retryable (429, 500, 502, 503, 504, 529,
connection errors, timeouts, a stream cut before its end marker) and nothing has been forwarded
to the caller yet: once a chunk has reached the user, repeating the call would repeat the text.
Delays grow exponentially from ``base_delay`` with full jitter, and a server's ``Retry-After``
wins (capped at ``max_retry_after``). Each retry is announced with a ``RetryNotice``. Sleeping
and randomness are injectable so tests assert the scheduled delays without waiting.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from openheim.errors import ProviderError
from openheim.events import RetryNotice
from openheim.providers.base import ModelRequest, Provider, StreamItem, closing_stream, is_content
from openheim.providers.relay import HandOn, Relay

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, jitter: float) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based); ``jitter`` is in [0, 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
        return ceiling / 2 + jitter * ceiling / 2


class RetryingProvider:
    """Wraps a provider; same protocol, with retries before the first forwarded chunk."""

    def __init__(
        self,
        inner: Provider,
        policy: RetryPolicy | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._jitter = jitter

    async def aclose(self) -> None:
        await self.inner.aclose()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        return Relay(self._attempts(request))

    async def _attempts(self, request: ModelRequest) -> AsyncGenerator[StreamItem | HandOn, None]:
        """Each try of the call, until one forwards content: from then on the inner stream
        is handed on (a later error is final, so there is nothing left to decide)."""
        attempt = 0
        while True:
            try:
                async with closing_stream(self.inner.stream(request)) as stream:
                    async for item in stream:
                        yield item
                        if is_content(item):
                            yield HandOn(stream)
                return
            except ProviderError as err:
                if not err.retryable or attempt >= self.policy.max_retries:
                    raise
                attempt += 1
                delay = self.policy.delay(attempt, err.retry_after, self._jitter())
                yield RetryNotice(attempt, delay, err.message, self.policy.max_retries)
                await self._sleep(delay)
