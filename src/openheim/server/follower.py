"""``Follower``: forwards the frames other replicas store to the clients attached here.

Each ``NOTIFY`` of stored frames (``server.relay``) only marks its session as wanted. One task
reads the new frames of every wanted session in one query, in a worker thread, so the event
loop never waits on PostgreSQL and a burst of notices from many streaming sessions costs one
read, not one per notice. The frames then go to each session's clients in order
(``Live.forward``), each once. A read that fails (PostgreSQL restarting) keeps the sessions
wanted and is tried again, ``RETRY_MIN`` seconds later, doubling up to ``RETRY_MAX``: frames a
prompt stored before the outage reach the clients once the store answers again, even when no
later notice comes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from openheim.redaction.secrets import redact

if TYPE_CHECKING:
    from openheim.server.hub import Hub

log = logging.getLogger(__name__)

RETRY_MIN = 0.1
RETRY_MAX = 2.0
"""Seconds before a failed read of frames, or a failed connection of the relay's listener, is
tried again (doubling from ``RETRY_MIN``)."""
ANY = -1
"""A wanted number for a session whose last stored frame is not known (after reconnecting)."""


class Follower:
    """The wanted sessions of one hub and the task that forwards their frames."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.wanted: dict[str, int] = {}
        """Session id to the highest number announced for it (``ANY``: read to find out)."""
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.task: asyncio.Task[None] | None = None
        """The forwarding task, started by the first notice (``Relay.aclose`` ends it)."""

    def notice(self, key: str, seq: int) -> None:
        """Frames of ``key`` up to ``seq`` were stored elsewhere (``ANY``: maybe some)."""
        known = self.wanted.get(key)
        self.wanted[key] = ANY if ANY in (seq, known) else max(seq, known or 0)
        self._idle.clear()
        self._wake.set()
        if self.task is None:
            self.task = asyncio.create_task(self._run())

    async def settled(self) -> None:
        """Return once every notice so far has been forwarded (or its session is gone)."""
        await self._idle.wait()

    async def _run(self) -> None:
        delay = RETRY_MIN
        while True:
            await self._wake.wait()
            self._wake.clear()
            taken, self.wanted = self.wanted, {}
            try:
                await self._forward(taken)
                delay = RETRY_MIN
            except Exception as err:  # the store's errors: PostgreSQL is back soon
                for key, seq in taken.items():  # wanted again, with what came meanwhile
                    self.notice(key, seq)
                line = redact((str(err).strip().splitlines() or [type(err).__name__])[0])
                log.warning("frames of other replicas were not read (%s); trying again", line)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
            if not self.wanted:
                self._idle.set()

    async def _forward(self, taken: dict[str, int]) -> None:
        """Read the frames of the sessions in ``taken`` past what each has forwarded, in one
        query off the loop, and forward them."""
        after: dict[str, int] = {}
        for key, seq in taken.items():
            live = self.hub.sessions.get(key)
            if live is None or live.writer is None or live.busy:
                continue  # closed, unsaved, or its own prompt runs here: nothing to follow
            if seq != ANY and seq <= live.seq:
                continue  # an old notice: forwarded already
            if seq != ANY and not live.subscribers:
                live.skip_to(seq)  # no one to send them to: only the numbering moves
                continue
            after[key] = live.seq
        if not after:
            return
        found = await asyncio.to_thread(self.hub.store.frames.after_many, after)
        for key, frames in found.items():
            live = self.hub.sessions.get(key)
            if live is not None:
                live.forward(frames)
