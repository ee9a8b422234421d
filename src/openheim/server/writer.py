"""``FrameWriter``: the frames of every open session, written to the store's frame log.

One writer serves the whole server: frames wait at most ``FLUSH_DELAY`` and go to the store in
one transaction, so that streaming many sessions costs one write now and then instead of one
per frame. The write runs on the event loop's thread, as every other write of this process
does: SQLite lets one writer in at a time, and a write from another thread would make the
loop's own writes wait for its lock. A reader that needs every frame so far in the store (a
client re-attaching) calls ``flush()`` first.
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

    def add(self, session_id: str, seq: int, text: str) -> None:
        self.rows.append((session_id, seq, text))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        """Write every frame added so far."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self.rows = self.rows, []
        if not batch:
            return
        try:
            self.store.frames.append(batch)
        except OpenheimError:
            log.warning("%d session frames were not stored", len(batch), exc_info=True)
