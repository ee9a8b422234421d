"""``BatchWriter``: the writes of every session of a store, committed together, off the loop.

A prompt writes the store a few times (its lease, the user's message, each message the loop
appends, the usage totals, the lease again), each once its own transaction, whose commit is most
of its cost. A server running many prompts at once hands those writes to one thread instead:
what is queued when the thread comes round goes in one transaction, each write in a savepoint of
it (a write that fails is undone alone and fails alone), and one commit makes the whole batch
durable. Each write's future is settled only after that commit, so a caller that awaits it knows
its write is stored, as with a transaction of its own; a process killed before the commit loses
only writes whose callers were still waiting. The futures of a batch are settled with one
call into their event loop, and the thread takes no lock of the loop's.

Writes are run in the order they were handed in, so one session's writes land in its order.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

T = TypeVar("T")

MAX_BATCH = 64
"""Writes in one transaction at most: a batch holds the store's lock, and a call of the
event loop's own waits for the batch in progress."""

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]
_Outcome = tuple["asyncio.Future[Any]", Any, BaseException | None]


class BatchWriter:
    """One writing thread for a store; ``transaction`` opens one of its transactions (inside
    which the store's own writes become savepoints)."""

    def __init__(self, transaction: Callable[[], AbstractContextManager[object]]) -> None:
        self._transaction = transaction
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, write: Callable[[], T]) -> asyncio.Future[T]:
        """Run ``write`` in the next batch; the future (of the running loop) gets its result
        or its exception once the batch is committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._start()
        self._queue.put((loop, future, write))
        return future

    def close(self) -> None:
        """Write what is queued and stop the thread (idempotent)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._work, name="openheim-store", daemon=True
                    )
                    self._thread.start()

    def _work(self) -> None:
        while (first := self._queue.get()) is not None:
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            _settle(batch, self._run(batch))
            if stop:
                return

    def _run(self, batch: list[_Item]) -> list[_Outcome]:
        """Each write of ``batch`` in one transaction; every outcome fails when the commit
        does."""
        outcomes: list[_Outcome] = []
        try:
            with self._transaction():
                for _, future, write in batch:
                    outcomes.append(_outcome(future, write))
        except Exception as err:  # the commit failed: nothing of the batch is stored
            return [(future, None, err) for _, future, _ in batch]
        return outcomes


def _outcome(future: asyncio.Future[Any], write: Callable[[], Any]) -> _Outcome:
    try:
        return future, write(), None
    except Exception as err:  # the write's savepoint is undone; the caller gets the error
        return future, None, err


def _settle(batch: list[_Item], outcomes: list[_Outcome]) -> None:
    """Hand each loop its outcomes, in one call per loop."""
    loops: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for (loop, _, _), outcome in zip(batch, outcomes, strict=True):
        loops.setdefault(loop, []).append(outcome)
    for loop, settled in loops.items():
        with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: no one waits
            loop.call_soon_threadsafe(_deliver, settled)


def _deliver(outcomes: list[_Outcome]) -> None:
    for future, result, error in outcomes:
        if future.done():  # cancelled by its caller
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
