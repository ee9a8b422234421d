"""``FrameWriter``: the frames of every open session, written to the store's frame log.

One writer serves the whole server: frames wait at most ``FLUSH_DELAY`` and go to the store in
one transaction, in a worker thread, so that streaming many sessions costs one write now and
then instead of one per frame, and the event loop never waits for the disk. A reader that needs
every frame so far in the store (a client re-attaching) awaits ``settle()`` first.
"""

from __future__ import annotations

import asyncio
import logging

from openheim.errors import OpenheimError
from openheim.store import SessionStore

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.05
"""Seconds a frame may wait before it is written (with those that follow it)."""


class FrameWriter:
    """Batches ``(session_id, seq, text)`` frames into the store; see the module docstring."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.rows: list[tuple[str, int, str]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._writing: asyncio.Future[None] | None = None

    def add(self, session_id: str, seq: int, text: str) -> None:
        self.rows.append((session_id, seq, text))
        if self._timer is None and self._writing is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self._start)

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self.rows = self.rows, []
        if batch:
            self._writing = asyncio.ensure_future(asyncio.to_thread(self._write, batch))
            self._writing.add_done_callback(self._done)

    def _done(self, _: asyncio.Future[None]) -> None:
        self._writing = None
        if self.rows and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self._start)

    def _write(self, batch: list[tuple[str, int, str]]) -> None:
        try:
            self.store.frames.append(batch)
        except OpenheimError:
            log.warning("%d session frames were not stored", len(batch), exc_info=True)

    async def settle(self) -> None:
        """Return once every frame added before the call is in the store."""
        while self._writing is not None or self.rows:
            if self._writing is None:
                self._start()
            if self._writing is not None:
                await asyncio.shield(self._writing)
