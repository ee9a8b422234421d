"""What a prompt of a stored session writes to the session store, kept off the event loop.

The prompt takes its lease, stores the user's message, stores each message the loop appends
and, once over, its usage totals and the lease's release. Each goes to the store's writing
thread (``SessionStore.later``), where the writes of every prompt running are committed
together, and the prompt waits for its own: a server starting and finishing many prompts at
once spends one commit on many of them, and its event loop never waits for SQLite.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from openheim.errors import OpenheimError
from openheim.messages import Message
from openheim.runtime.history import PersistentHistory

if TYPE_CHECKING:
    from openheim.store.base import Lease, SessionStore
    from openheim.usage import Meter

log = logging.getLogger(__name__)

_T = TypeVar("_T")

REFRESH = 20.0
"""Seconds between two heartbeats of a running prompt's lease (the store wants one a minute),
or a third of the lease's timeout when that is shorter (PostgreSQL's 10 seconds)."""


async def off_loop(
    store: SessionStore, write: Callable[[], _T], *, undo: Callable[[_T], None] | None = None
) -> _T:
    """``write`` done by the store's writing thread. Cancelled while it waits, the write still
    completes, and ``undo`` is applied to its result (a lease taken is given back)."""
    future = store.later(write)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if undo is not None:
            future.add_done_callback(functools.partial(_undo, undo))
        raise


def _undo(undo: Callable[[_T], None], done: asyncio.Future[_T]) -> None:
    if not done.cancelled() and done.exception() is None:
        undo(done.result())


def release(lease: Lease) -> None:
    lease.release()


class Heartbeat:
    """Refreshes a prompt's lease at each model call, and on a timer while a model call or a
    tool runs long (``start``/``stop``), at most every ``REFRESH`` seconds: far inside the
    store's timeout, after which another host may take a lease over as stale. Each refresh is
    a write done by the store's writing thread (``off_loop``): on PostgreSQL it waits its turn
    among every replica's writes, which the event loop must not."""

    def __init__(self, lease: Lease | None, store: SessionStore | None) -> None:
        self.lease = lease
        self.store = store
        self.every = REFRESH if lease is None else min(REFRESH, lease.timeout / 3)
        self.last = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._ticking: asyncio.Task[None] | None = None

    async def beat(self) -> None:
        """Refresh the lease if it is due; ``SessionBusy`` when another holder took it over."""
        now = time.monotonic()
        if self.lease is not None and self.store is not None and now - self.last >= self.every:
            self.last = now
            await off_loop(self.store, self.lease.refresh)

    def start(self) -> None:
        """Refresh every ``every`` seconds until ``stop``, whatever the prompt is doing."""
        if self.lease is not None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.every, self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._ticking is not None:
            self._ticking.cancel()  # a refresh under way still completes (``off_loop``)
            self._ticking = None

    def _tick(self) -> None:
        self._timer = None
        self._ticking = asyncio.ensure_future(self._timed())

    async def _timed(self) -> None:
        try:
            await self.beat()
        except OpenheimError as err:  # taken over: the prompt's own store writes say so
            log.warning("could not refresh a prompt's lease: %s", err)
            return
        self._ticking = None
        self.start()


async def record(history: list[Message], message: Message) -> None:
    """Append the prompt's message; a stored history from now on (until ``settle``) hands
    each write over (``PersistentHistory.deferred``), and this waits for the first."""
    if not isinstance(history, PersistentHistory):
        history.append(message)
        return
    history.deferred = True
    history.append(message)
    try:
        await history.saved()
    except BaseException:  # the prompt ends here: later appends are written as they come
        history.deferred = False
        raise


async def settle(
    store: SessionStore, session_id: str, history: list[Message], meter: Meter, lease: Lease | None
) -> None:
    """The prompt is over: wait for its messages to be stored (a failure was raised to its
    reader already, or no one reads on: it is logged), then store its usage totals and give
    its lease back, in one write (totals that cannot be stored are logged, and the lease is
    given back all the same)."""
    if isinstance(history, PersistentHistory):
        try:
            await history.saved()
        except OpenheimError:
            log.warning("a message of session %s was not stored", session_id, exc_info=True)
        finally:
            history.deferred = False
    usage, cost = meter.usage, meter.cost

    def write() -> None:
        try:
            store.update(session_id, usage=usage, cost=cost)
        except OpenheimError:  # the totals are lost (said in the log); the lease is not kept
            log.warning("the usage totals of session %s were not stored", session_id, exc_info=True)
        if lease is not None:
            lease.release()

    await off_loop(store, write)
