"""Blocking tool work that a cancelled call leaves at once and that stops at a deadline.

The built-in tools that walk trees or read many files run their work in a thread of its own with
``run_bounded(work, overrun)``. The work gets a ``Budget`` and checks ``budget.is_set()``
between units of work (a folder entry, a file, a chunk of a file). It turns true when the call
is cancelled or when the time limit has passed; ``budget.expired`` then tells the work to end
with a note that it stopped early, so the model can narrow its request.

A cancelled call returns at once, without waiting for the thread: the thread ends at its next
check, so the process's exit waits for one unit of work at most. (Not ``asyncio.to_thread``:
abandoned work would fill the default executor's few threads. Not a daemon thread either: one
killed at exit inside RE2, which runs without the GIL, aborts the process.) Should one unit of
work overrun the deadline by more than ``GRACE`` seconds, the call returns ``overrun()``
without waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

TIME_LIMIT = 20.0
"""Seconds a search, glob or listing may take before it stops with what it found so far."""
GRACE = 0.5


class Budget(threading.Event):
    """A stop flag that sets itself once ``seconds`` have passed (then ``expired`` is true)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.expired = False
        self._deadline = time.monotonic() + seconds

    def is_set(self) -> bool:
        if super().is_set():
            return True
        if time.monotonic() < self._deadline:
            return False
        self.expire()
        return True

    def expire(self) -> None:
        """Stop the work: its time is up."""
        self.expired = True
        self.set()

    def note(self, advice: str) -> str:
        """The line a result ends with when the time ran out."""
        return f"[stopped after {self.seconds:g} s; {advice}]"


async def run_bounded(work: Callable[[Budget], T], overrun: Callable[[Budget], T]) -> T:
    """``work(budget)`` in a thread of its own, within ``TIME_LIMIT`` seconds.

    When the work is still busy ``GRACE`` seconds after the limit, ``overrun(budget)`` gives
    the result instead (it may read what the work collected so far, or raise).
    """
    budget = Budget(TIME_LIMIT)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    thread = threading.Thread(target=_work, args=(work, budget, loop, done), name="openheim-tool")
    thread.start()
    try:
        finished, _ = await asyncio.wait({done}, timeout=budget.seconds + GRACE)
        if finished:
            return done.result()
        budget.expire()
        return overrun(budget)
    finally:
        budget.set()
        done.cancel()


def _work(
    work: Callable[[Budget], T],
    budget: Budget,
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[T],
) -> None:
    settle: Callable[[], None]
    try:
        value = work(budget)
    except BaseException as err:  # handed to the awaiting call, which raises it
        settle = functools.partial(_fail, done, err)
    else:
        settle = functools.partial(_succeed, done, value)
    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
        loop.call_soon_threadsafe(settle)


def _succeed(done: asyncio.Future[T], value: T) -> None:
    if not done.done():
        done.set_result(value)


def _fail(done: asyncio.Future[T], err: BaseException) -> None:
    if not done.done():
        done.set_exception(err)
