"""``Mailbox``: an unbounded queue with one reader, for the paths every streamed delta takes.

``asyncio.Queue`` serves any number of readers and writers, counts unfinished tasks and wakes
waiters through a deque of futures; each ``put`` and ``get`` runs a dozen Python calls for
that. A run's events and a connection's outgoing frames each have exactly one reader, so
they need only a deque and, while the reader waits, one future to wake it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Items in arrival order for a single reader (``get``); ``put`` never waits."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> T:
        """The next item, waiting for one if none is there (one reader at a time)."""
        while not self._items:
            if self._waiter is not None:
                raise RuntimeError("a Mailbox has one reader")
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    @property
    def waiting(self) -> bool:
        """True while the reader waits in ``get`` and nothing has been put since."""
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def get_nowait(self) -> T:
        """The next item; IndexError when there is none."""
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
