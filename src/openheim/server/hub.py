"""The hub: the sessions the server keeps open (``server.live.Live``) by id.

It opens and resumes them through a ``SessionHost``, closes one nobody has watched for a
while, deletes one with its frames, and, on the PostgreSQL store, listens to the other
replicas (``server.relay``) and writes every session's frames through one ``FrameWriter``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable

from openheim.errors import OpenheimError, SessionNotFound
from openheim.runtime import Runtime, Session, SessionHost, SessionOptions
from openheim.server import relay
from openheim.server.live import IDLE_CLOSE, MAX_LOG, Live
from openheim.server.start_gate import StartGate
from openheim.server.writer import FLUSH_DELAY, RELAY_DELAY, FrameWriter
from openheim.store import SessionStore


class Hub:
    """The live sessions of one server by id: frames here, sessions kept by a ``SessionHost``."""

    def __init__(
        self,
        runtime: Runtime,
        store: SessionStore,
        max_log: int = MAX_LOG,
        idle_close: float = IDLE_CLOSE,
    ) -> None:
        self.runtime = runtime
        self.host = SessionHost(runtime)
        self.store = store
        self.gate = StartGate()
        self.max_log = max_log
        self.idle_close = idle_close
        self._closing: set[asyncio.Task[None]] = set()
        self.sessions: dict[str, Live] = {}
        self.deleting: set[str] = set()
        shared = relay.postgres(store)
        self.relay = relay.Relay(self, shared) if shared is not None else None
        self.writer = FrameWriter(store, RELAY_DELAY if shared is not None else FLUSH_DELAY)

    def start(self) -> None:
        """Listen to the other replicas (a PostgreSQL store only)."""
        if self.relay is not None:
            self.relay.start()

    async def open(self, options: SessionOptions) -> Live:
        """Open (or resume) a session that lives until ``close`` or the server stops."""
        live = Live(self.max_log, self.idle_close)
        live.on_idle = self._idle
        live.gate = self.gate
        key, session = await self.host.open(None, options, resolver=live.resolve, keep=True)
        opened = self.sessions.get(key)
        if opened is not None and opened.session is session:  # resumed by another client
            return opened  # meanwhile: that one is the session
        live.session, live.key = session, key
        live.closer = functools.partial(self.host.close, key, session)
        if live.session.id is not None:
            if self._gone(live.key):  # deleted as it opened: no prompt may run on it
                await self.host.close(key)
                raise SessionNotFound(live.key)
            live.writer = self.writer
            if options.resume is not None or options.continue_latest:
                self.writer.flush()  # its frames of an earlier opening, all in the log first
            live.seq = self.store.frames.last(live.key)
        self.sessions[live.key] = live
        live.session.on_close(self._dropper(live))
        return live

    def _idle(self, live: Live) -> None:
        if self.sessions.get(live.key) is not live:  # closed before: the key may name a newer
            return  # opening of the session, which is not idle
        task = asyncio.create_task(self.forget(live.key))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _dropper(self, live: Live) -> Callable[[Session], None]:
        """Forget ``live`` once its session closed, unless the key names a newer opening of
        the session by then (resumed while this one was closing)."""

        def drop(_: Session) -> None:
            if self.sessions.get(live.key) is live:
                del self.sessions[live.key]

        return drop

    def get(self, key: str) -> Live | None:
        return self.sessions.get(key)

    def _gone(self, key: str) -> bool:  # the stored session is being deleted, or is gone
        with contextlib.suppress(OpenheimError):
            return key in self.deleting or not self.store.get(key)
        return True

    def stored(self, key: str) -> Live | None:
        """The open session whose stored id ``key`` names (a unique prefix of it): resuming
        it attaches to it instead of opening it a second time, with numbers of its own."""
        try:
            record = self.store.get(key)
        except OpenheimError:  # no such session: opening it says so
            return None
        return self.sessions.get(record.id)

    def busy(self) -> bool:
        """Whether a prompt runs (or waits to begin) in any open session."""
        return any(live.busy for live in self.sessions.values())

    async def forget(self, key: str) -> None:
        """Close the session ``key`` if it is open here."""
        live = self.sessions.pop(key, None)
        if live is not None:
            await live.close()

    async def delete(self, key: str) -> None:
        """Close and delete the session ``key``, its closing frames written first (after, they
        would fail their batch); a resume meanwhile is refused (``open``): no prompt runs on it."""
        self.deleting.add(key)
        try:
            await self.forget(key)
            self.writer.flush()
            self.store.delete(key)
        finally:
            self.deleting.discard(key)

    async def close_all(self) -> None:
        if self.relay is not None:
            await self.relay.aclose()
        for key in list(self.sessions):
            await self.forget(key)
        await self.host.aclose()
        await self.writer.aclose()
