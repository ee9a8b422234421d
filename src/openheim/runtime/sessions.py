"""``SessionHost``: the sessions a surface keeps open across prompts, each under a key of the
surface's own (a chat conversation, a client's session).

Opening a session starts its MCP servers and runs its ``session_start`` hook, so a surface
that serves many prompts of one conversation opens its session once and keeps it. The host
holds each session in a task of its own (``host_session``), so any task may prompt it; it
closes a session no one used for ``idle_close`` seconds (it can be resumed from the store),
refuses a second use while one runs (``SessionBusy``), and closes a session retired while in
use once that use ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Resolver
from openheim.errors import SessionBusy
from openheim.runtime.host import host_session
from openheim.runtime.options import SessionOptions
from openheim.runtime.runtime import Runtime
from openheim.runtime.session import Session
from openheim.tools.client_io import ClientIO

log = logging.getLogger(__name__)

IDLE_CLOSE = 600.0
"""Seconds a session stays open with no use running before the host closes it."""


class _Resolver:
    """A session's resolver: it asks the resolver of the use running in the session (each
    use brings its own, as an MCP tool call brings its client's elicitation)."""

    def __init__(self, current: Resolver) -> None:
        self.current = current

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        return await self.current(request, ask)


@dataclass(eq=False)
class _Open:
    """One open session, what it was opened with, and whether a use of it runs."""

    key: str
    options: SessionOptions
    session: Session
    resolver: _Resolver | None
    """Asks each use's resolver; None: the session asks the runtime's own (``Runtime``)."""
    in_use: bool = False
    timer: asyncio.TimerHandle | None = None

    def fits(self, options: SessionOptions, resolver: Resolver | None) -> bool:
        """Whether ``options`` ask for this session: the same choices, and a ``resume`` that
        names it as it was opened or by its id (None only for an unsaved session); and whether
        ``resolver`` can be asked in it."""
        same = dataclasses.replace(options, resume=None) == dataclasses.replace(
            self.options, resume=None
        )
        asks = (resolver is None) == (self.resolver is None)
        resume = options.resume
        named = resume == self.session.id or (resume is not None and resume == self.options.resume)
        return same and asks and named

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class SessionHost:
    """Open sessions by key, over one ``Runtime``.

    A key is the surface's own (a chat conversation), or None: then the session is kept under
    its stored id, which ``options.resume`` names to use it again (an unsaved one, which no
    one can name, closes after its use)."""

    def __init__(self, runtime: Runtime, *, idle_close: float = IDLE_CLOSE) -> None:
        self.runtime = runtime
        self.idle_close = idle_close
        self._open: dict[str, _Open] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, key: str) -> Session | None:
        """The session open under ``key``, if any."""
        found = self._open.get(key)
        return found.session if found is not None else None

    @contextlib.asynccontextmanager
    async def use(
        self, key: str | None, options: SessionOptions, *, resolver: Resolver | None
    ) -> AsyncIterator[Session]:
        """The session open under ``key`` for the block (opened now when there is none or
        ``options`` ask for another one), its approvals settled by ``resolver`` meanwhile;
        ``SessionBusy`` while another use of it runs. After the block it stays open until it
        is idle, retired, or the host closes."""
        entry = await self._entry(key, options, resolver)
        entry.in_use = True
        entry.stop_timer()
        try:
            yield entry.session
        finally:
            entry.in_use = False
            if self._open.get(entry.key) is not entry:  # retired during the use
                self._close_later(entry)
            elif key is None and entry.session.id is None:  # no one can name it again
                self.retire(entry.key)
            else:
                self._watch(entry)

    def retire(self, key: str) -> None:
        """Forget the session under ``key``: the next use opens another one; it closes now, or
        once the use running in it ends."""
        entry = self._open.pop(key, None)
        if entry is not None and not entry.in_use:
            self._close_later(entry)

    async def aclose(self) -> None:
        """Close every open session (a running prompt is cancelled) and wait for them."""
        entries = list(self._open.values())
        self._open.clear()
        for entry in entries:
            self._close_later(entry)
        while self._closing:  # a close may start another while these run
            closing = list(self._closing)
            await asyncio.gather(*closing, return_exceptions=True)
            # dropped here as well as by their done callbacks: on Python 3.13 a finished
            # close was seen still in the set after gather, and this loop spun on it
            self._closing.difference_update(closing)

    async def open(
        self,
        key: str | None,
        options: SessionOptions,
        *,
        resolver: Resolver | None,
        client: ClientIO | None = None,
        keep: bool = False,
    ) -> tuple[str, Session]:
        """Open a session and keep it under ``key`` (else its id, else a new name) until
        ``close``, ``retire`` or ``aclose``. A session open under that name already is closed
        (``SessionBusy`` while a prompt runs in it); with ``keep`` it stays and is the one
        returned, the one just opened closed (another client resumed it meanwhile). The
        name, and the session."""
        name = key if key is not None else options.resume
        if name is not None and not keep:
            self._refuse_busy(name)
            self.retire(name)
        entry = await self._start(key, options, resolver, client, keep)
        return entry.key, entry.session

    async def close(self, key: str, session: Session | None = None) -> None:
        """Close the session open under ``key`` (a running prompt is cancelled); or, given
        ``session``, close that one, while a newer opening under ``key`` stays open."""
        entry = self._open.get(key)
        if entry is not None and session in (None, entry.session):
            del self._open[key]
            entry.stop_timer()
            await entry.session.close()
        elif session is not None:
            await session.close()

    def _refuse_busy(self, name: str) -> None:
        entry = self._open.get(name)
        if entry is not None and (entry.in_use or entry.session.busy):
            raise SessionBusy(name, pid=os.getpid(), host="this process")

    async def _entry(
        self, key: str | None, options: SessionOptions, resolver: Resolver | None
    ) -> _Open:
        """The open session ``key`` (else ``options.resume``) names, if it fits ``options``;
        else a session opened now, kept under ``key`` (else its id)."""
        name = key if key is not None else options.resume
        if name is not None:
            self._refuse_busy(name)
            entry = self._open.get(name)
            if entry is not None and entry.fits(options, resolver):
                if entry.resolver is not None and resolver is not None:
                    entry.resolver.current = resolver
                return entry
            self.retire(name)
        return await self._start(key, options, resolver, None)

    async def _start(
        self,
        key: str | None,
        options: SessionOptions,
        resolver: Resolver | None,
        client: ClientIO | None,
        keep: bool = False,
    ) -> _Open:
        """A session opened now, kept under ``key`` (else its id, else a new name); with
        ``keep``, the one open under that name already, if any."""
        asks = _Resolver(resolver) if resolver is not None else None
        runtime = self.runtime
        session = await host_session(
            lambda: runtime.open_session(options, resolver=asks, client=client)
        )
        name = key if key is not None else session.id or uuid.uuid4().hex
        if keep and (other := self._open.get(name)) is not None:
            await session.close()
            return other
        try:
            self._refuse_busy(name)  # another use opened it meanwhile (or by another prefix)
        except SessionBusy:
            await session.close()
            raise
        self.retire(name)
        entry = self._open[name] = _Open(name, options, session, asks)
        session.on_close(lambda _: self._forget(entry))
        return entry

    def _forget(self, entry: _Open) -> None:
        """``entry``'s session closed (here or by its own ``close()``): it is open no more."""
        entry.stop_timer()
        if self._open.get(entry.key) is entry:
            del self._open[entry.key]

    def _watch(self, entry: _Open) -> None:
        """Close ``entry`` once it has gone unused for ``idle_close`` seconds."""
        entry.stop_timer()
        loop = asyncio.get_running_loop()
        entry.timer = loop.call_later(self.idle_close, self._idle, entry)

    def _idle(self, entry: _Open) -> None:
        entry.timer = None
        if self._open.get(entry.key) is entry and not entry.in_use:
            log.debug("closing the idle session of %s", entry.key)
            del self._open[entry.key]
            self._close_later(entry)

    def _close_later(self, entry: _Open) -> None:
        """Close ``entry``'s session in a task of the host's (``aclose`` waits for it)."""
        entry.stop_timer()
        task = asyncio.create_task(entry.session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
