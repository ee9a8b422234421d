"""Fallback chain: when a provider is unavailable, the next one takes the same request.

A provider falls through when it fails before forwarding any content with an availability error
(unreachable, timed out, a cut stream, an overloaded or failing server, a bad key or a missing
model) after its own retries. A malformed request, a context overflow or a broken wire format
would fail the same way elsewhere, so they are raised at once. Each switch is announced with a
``Notice``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    StreamCut,
)
from openheim.events import Notice
from openheim.providers.base import ModelRequest, Provider, StreamItem, is_content

_FALL_THROUGH_STATUSES = frozenset({401, 403, 404})


def falls_through(error: ProviderError) -> bool:
    """Whether another provider could succeed where this one failed."""
    if isinstance(error, ContextOverflow):
        return False
    if isinstance(error, ProviderHTTPError):
        return error.retryable or error.status in _FALL_THROUGH_STATUSES
    if isinstance(error, ProviderProtocolError):
        return isinstance(error, StreamCut)
    return True


class FallbackProvider:
    """Tries ``(provider, model)`` pairs in order; the first pair is the primary."""

    def __init__(self, chain: Sequence[tuple[Provider, str]]) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one provider")
        self.chain = list(chain)
        self.name = chain[0][0].name

    async def aclose(self) -> None:
        for provider, _ in self.chain:
            await provider.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for index, (provider, model) in enumerate(self.chain):
            attempt = request if index == 0 else dataclasses.replace(request, model=model)
            forwarded = False
            try:
                async for item in provider.stream(attempt):
                    forwarded = forwarded or is_content(item)
                    yield item
                return
            except ProviderError as err:
                last = index == len(self.chain) - 1
                if forwarded or last or not falls_through(err):
                    raise
                following = self.chain[index + 1][0].name
                yield Notice(
                    f"provider {provider.name!r} failed ({err.message}); "
                    f"falling back to {following!r}",
                    "warning",
                )
