"""``FrameWriter``: the frames of every open session, written to the store's frame log.

One writer serves the whole server: frames wait at most ``FLUSH_DELAY`` and go to the store in
one transaction, so that streaming many sessions costs one write now and then instead of one
per frame. The write runs on a thread of its own: SQLite does its work (and the WAL
checkpoints that writes trigger now and then) without the interpreter lock, so the event loop
goes on delivering frames meanwhile instead of stopping for each batch (a few milliseconds for
a thousand streaming sessions). Batches are written one at a time, in order, through the
store's one connection, whose lock makes any write of the loop's own wait at most for the
batch in progress. A reader that needs every frame so far in the store (a client
re-attaching) calls ``flush()`` first, which waits for that batch and writes the rest itself:
the batches handed to the thread wait in one queue, and whoever holds the write lock writes
every batch queued so far, so one the thread has not begun is never left out. The frames of a
session deleted meanwhile (by another process) are dropped alone; the batch's others are stored.
A batch the store fails to write (its database restarting) is written again, in order, with
the next one or ``RETRY_DELAY`` seconds later, whichever comes first (``MAX_UNSTORED`` frames
at most), so no frame is missing from the log between two that are there, and the last frame of
a turn reaches it too, though no frame follows it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from openheim.errors import OpenheimError, SessionNotFound
from openheim.store import SessionStore

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.05
"""Seconds a frame may wait before it is written (with those that follow it)."""
RELAY_DELAY = 0.005
"""The same on a PostgreSQL store, whose other replicas forward a frame once it is stored: a
short wait, and one batch at a time, so the frames that come while a batch is written go
together in the next one (the busier the server, the larger the batches). With no wait at all,
a batch held one frame or two: a transaction and a notice, read by every other replica, for
each, which cost the fleet more CPU than the frames themselves."""

RETRY_DELAY = 0.5
"""Seconds before a batch the store failed is tried again when no other frame comes."""
MAX_UNSTORED = 100_000
"""Frames kept to be written again while the store fails (PostgreSQL restarting); past it,
they are dropped with a warning."""

Row = tuple[str, int, str]
"""``(session_id, seq, text)``."""


class FrameWriter:
    """Batches ``(session_id, seq, text)`` frames into the store; see the module docstring."""

    def __init__(self, store: SessionStore, delay: float = FLUSH_DELAY) -> None:
        self.store = store
        self.delay = delay
        """Seconds a frame may wait (shorter where other replicas read the frames)."""
        self.rows: list[Row] = []
        self._timer: asyncio.TimerHandle | None = None
        self._lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._writing: set[asyncio.Future[None]] = set()
        self._handed: deque[list[Row]] = deque()
        """Batches handed over and not written yet, oldest first (taken under ``_lock``)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def add(self, session_id: str, seq: int, text: str) -> None:
        self.rows.append((session_id, seq, text))
        self._loop = asyncio.get_running_loop()
        if self._timer is None and (self.delay or not self._writing):
            self._timer = self._loop.call_later(self.delay, self._hand_over)

    def _hand_over(self) -> None:
        """Give the frames added so far, and any batch left to write again, to the writing
        thread."""
        self._timer = None
        batch, self.rows = self.rows, []
        if batch:
            self._handed.append(batch)
        if not self._handed:
            return
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="openheim-frames")
        future = asyncio.get_running_loop().run_in_executor(self._thread, self._write)
        self._writing.add(future)
        future.add_done_callback(self._written)

    def _written(self, future: asyncio.Future[None]) -> None:
        """A batch is written: with no delay, the frames added meanwhile go next (a failed
        batch waits for ``_retry``'s timer instead, set before this runs)."""
        self._writing.discard(future)
        if self.rows and self._timer is None and not self._closed and self._loop is not None:
            self._timer = self._loop.call_later(self.delay, self._hand_over)

    def flush(self) -> None:
        """Write every frame added so far (after the batch being written, if any)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self.rows = self.rows, []
        if batch:
            self._handed.append(batch)
        self._write()

    async def aclose(self) -> None:
        """Write every frame added so far and wait for the thread's batches (a batch the store
        fails now is not tried again)."""
        self._closed = True
        self.flush()
        if self._writing:
            await asyncio.gather(*self._writing)
        if self._thread is not None:
            self._thread.shutdown()
            self._thread = None

    def _write(self) -> None:
        """Write every batch handed over so far, in one transaction (none left: nothing)."""
        with self._lock:
            batch = []
            while self._handed:
                batch += self._handed.popleft()
            if not batch:
                return
            try:
                self._append(batch)
            except OpenheimError as err:  # the database is away: try again with the next batch
                if len(batch) > MAX_UNSTORED:
                    log.warning("%d session frames were not stored: %s", len(batch), err.message)
                    return
                self._handed.appendleft(batch)
                if self._loop is not None and not self._closed:
                    self._loop.call_soon_threadsafe(self._retry)

    def _retry(self) -> None:
        """Try the failed batch again in ``RETRY_DELAY`` seconds, unless a frame comes first."""
        if self._timer is None and not self._closed and self._loop is not None:
            self._timer = self._loop.call_later(RETRY_DELAY, self._hand_over)

    def _append(self, batch: list[Row]) -> None:
        """Store a batch; when a session of it is gone (deleted by another process while it
        streamed), store the others' frames alone and drop that one's."""
        try:
            self.store.frames.append(batch)
            return
        except SessionNotFound:
            pass
        sessions: dict[str, list[Row]] = {}
        for row in batch:
            sessions.setdefault(row[0], []).append(row)
        for session_id, rows in sessions.items():
            try:
                self.store.frames.append(rows)
            except SessionNotFound:
                log.info("%d frames of deleted session %s dropped", len(rows), session_id)
