"""The session: one conversation with an agent, persisted message by message.

``Session`` runs one prompt at a time: the prompt holds the session's lease, and a second
process gets ``SessionBusy``. ``AgentSession`` is the library's face of it: prompts as
``PromptRun``s, cancel, switch model or mode, close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from openheim.errors import SessionBusy
from openheim.events import Event, IterationStart
from openheim.messages import Message
from openheim.runtime.host import Host
from openheim.runtime.prompt_run import PromptRun
from openheim.tools.base import ToolSet

if TYPE_CHECKING:
    from openheim.loop import Agent
    from openheim.providers.base import ProviderSettings
    from openheim.store.base import Lease, SessionRecord, SessionStore

log = logging.getLogger(__name__)

CLOSE_WAIT = 10.0
"""Seconds ``close()`` waits for a cancelled prompt to finish writing its history."""


class Session:
    """An agent and its history; ``record`` and ``store`` are None for an unsaved session."""

    def __init__(
        self,
        agent: Agent,
        history: list[Message],
        *,
        record: SessionRecord | None = None,
        store: SessionStore | None = None,
        provider_settings: ProviderSettings | None = None,
    ) -> None:
        self.agent = agent
        self.provider_settings = provider_settings
        self.history = history
        self.record = record
        self.store = store

    @property
    def id(self) -> str | None:
        return self.record.id if self.record else None

    @property
    def saved(self) -> bool:
        return self.store is not None and self.record is not None

    async def prompt(
        self,
        content: str | Message,
        *,
        cancel: asyncio.Event | None = None,
        settled: asyncio.Event | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run one prompt; yields the run's events (the last one is ``Finished``). ``settled``
        is set once the run has written its last message, even if no one reads on."""
        message = content if isinstance(content, Message) else Message.user(content)
        with self._lease() as lease:
            self.history.append(message)
            run = self.agent.run(self.history, cancel=cancel, settled=settled)
            try:
                async with contextlib.aclosing(run) as events:  # closed with us: repaired now
                    async for event in events:
                        if lease is not None and isinstance(event, IterationStart):
                            lease.refresh()
                        yield event
            finally:
                self._store_totals()

    def _lease(self) -> contextlib.AbstractContextManager[Lease | None]:
        if self.store is None or self.record is None:
            return contextlib.nullcontext()
        return self.store.acquire(self.record.id)

    def _store_totals(self) -> None:
        if self.store is not None and self.record is not None:
            meter = self.agent.meter
            self.store.update(self.record.id, usage=meter.usage, cost=meter.cost)


class AgentSession:
    """A session opened by ``Runtime``: prompt it, cancel a prompt, switch model or mode, close.

    Use it as ``async with await runtime.new_session() as session:`` or call ``close()``.
    """

    def __init__(self, session: Session, host: Host) -> None:
        self._session = session
        self._host = host
        self._running: PromptRun | None = None
        self._close_pending = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._all_tools = session.agent.tools
        self._on_close: list[Callable[[AgentSession], None]] = []

    @property
    def id(self) -> str | None:
        """The stored session's id (None when sessions are not saved)."""
        return self._session.id

    @property
    def history(self) -> list[Message]:
        return self._session.history

    @property
    def model(self) -> str:
        return self._session.agent.model

    @property
    def session(self) -> Session:
        """The runtime's session underneath (agent, history, store record)."""
        return self._session

    @property
    def busy(self) -> bool:
        return self._running is not None

    def prompt(self, content: str | Message) -> PromptRun:
        """Start describing a prompt; it runs when iterated or awaited."""
        message = content if isinstance(content, Message) else Message.user(content)
        return PromptRun(self, message)

    def cancel(self) -> None:
        """Cancel the running prompt, if any: it ends with stop reason ``cancelled``."""
        if self._running is not None:
            self._running.cancel()

    def set_model(self, model: str) -> None:
        """Use ``model`` (of the same provider) from the next model call on."""
        self._session.agent.model = model
        record, store = self._session.record, self._session.store
        if record is not None and store is not None:
            store.update(record.id, model=model)

    @property
    def read_only(self) -> bool:
        return self._session.agent.tools is not self._all_tools

    def set_read_only(self, read_only: bool) -> None:
        """Offer only read-only tools (a planning mode), or every tool again."""
        tools = self._all_tools
        if read_only:
            tools = ToolSet(t for t in tools if t.capabilities.read_only)
        self._session.agent.tools = tools

    def claim(self, run: PromptRun) -> Session:
        """Mark ``run`` as the running prompt; a second concurrent prompt is refused."""
        if self._host.closed or self._close_pending:
            raise RuntimeError("this session is closed; open or resume it again")
        if self._running is not None:
            raise SessionBusy(self.id or "unsaved", pid=os.getpid(), host=socket.gethostname())
        self._running = run
        self._idle.clear()
        return self._session

    async def release(self, run: PromptRun) -> None:
        """``run`` ended; a close asked for by its own reader happens now."""
        if self._running is not run:
            return
        self._running = None
        self._idle.set()
        if self._close_pending:
            await self._close_now()

    def on_close(self, callback: Callable[[AgentSession], None]) -> None:
        """Call ``callback`` once the session is closed."""
        self._on_close.append(callback)

    async def close(self) -> None:
        """Cancel a running prompt and close everything the session opened (idempotent).

        A running prompt first records its cancellation in the history, and its reader still
        gets its last events (the cancelled results, then ``Finished``), whichever task reads
        it and whether or not close() is called from inside its loop. When no one is inside
        the prompt's stream at that moment (its reader is between two events, or close() is
        called from the reader's own loop), the prompt's events are taken for the reader and
        everything is closed before close() returns; a reader in another task that is taking
        an event right then closes the session once it has taken the last one."""
        running = self._running
        if running is None:
            await self._close_now()
            return
        running.cancel()
        self._close_pending = True
        if running.iterator is None:  # left with break: the event loop is finalising it
            await _wait(self._idle)
        else:
            await _wait(running.settled)
            if await running.take_rest():
                await self.release(running)
        if self._running is None and self._close_pending:
            await self._close_now()

    async def _close_now(self) -> None:
        self._close_pending = False
        await self._host.close()
        while self._on_close:
            self._on_close.pop()(self)

    async def __aenter__(self) -> AgentSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _wait(event: asyncio.Event) -> None:
    try:
        await asyncio.wait_for(event.wait(), CLOSE_WAIT)
    except TimeoutError:
        log.warning("a cancelled prompt did not end within %s s", CLOSE_WAIT)


async def host_session(
    opener: Callable[[], AbstractAsyncContextManager[Session]],
) -> AgentSession:
    """Open a session in a task of its own and hand back its ``AgentSession``."""
    host = Host()
    session = await host.open(opener)
    return AgentSession(session, host)
