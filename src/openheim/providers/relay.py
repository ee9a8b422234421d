"""Provider wrappers that step aside once they have nothing left to decide.

A wrapper such as ``RetryingProvider`` or ``ContextFitter`` decides things only until the
first content reaches the caller (after that an error is final, and every item passes as it
is). Written as a plain async generator it would still be resumed, and re-yield, for every
delta of the stream. ``Relay`` runs the wrapper's generator (its ``head``) until that yields
``HandOn(stream)``; from then on ``__anext__`` returns ``stream``'s own awaitable, so each
later item costs the caller nothing extra. Closing the relay closes the head, whose
``closing_stream`` block closes the inner stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable

from openheim.providers.base import StreamItem


class HandOn:
    """Yielded by a wrapper's generator: the rest of the stream is ``stream``'s, untouched."""

    __slots__ = ("stream",)

    def __init__(self, stream: AsyncIterator[StreamItem]) -> None:
        self.stream = stream


class Relay:
    """The stream of a wrapper whose generator ``head`` may hand on its inner stream."""

    __slots__ = ("_head", "_source")

    def __init__(self, head: AsyncGenerator[StreamItem | HandOn, None]) -> None:
        self._head = head
        self._source: AsyncIterator[StreamItem] | None = None

    def __aiter__(self) -> Relay:
        return self

    def __anext__(self) -> Awaitable[StreamItem]:
        source = self._source
        return self._step() if source is None else source.__anext__()

    async def _step(self) -> StreamItem:
        item = await self._head.__anext__()
        if isinstance(item, HandOn):
            self._source = item.stream
            return await item.stream.__anext__()
        return item

    async def aclose(self) -> None:
        """Close the head (and with it the inner stream it holds open)."""
        self._source = None
        await self._head.aclose()
