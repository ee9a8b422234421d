"""``AgentSession``: a live session of the library API, and ``PromptRun``, one prompt in it.

``open_session`` is an async context manager whose parts (MCP clients among them) must be
entered and left by one task, while a library user or a protocol server opens a session in one
request and closes it in another. So each session lives in a task of its own that holds the
context open until ``close()``; prompts run in the caller's task and share the session's agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from openheim.errors import SessionBusy
from openheim.events import Event, Finished
from openheim.messages import Message, StopReason, Usage
from openheim.session import Session
from openheim.tools.base import ToolSet

log = logging.getLogger(__name__)

CLOSE_WAIT = 10.0
"""Seconds ``close()`` waits for a cancelled prompt to finish writing its history."""


@dataclass(frozen=True)
class PromptResult:
    """How a prompt ended: the final text, the stop reason and the run's usage and events."""

    text: str
    stop_reason: StopReason
    reason: str | None
    usage: Usage
    events: list[Event] = field(default_factory=list)


class PromptRun:
    """One prompt: iterate it for its events, or await it for its ``PromptResult``.

    It runs when first iterated or awaited, once; ``AgentSession.cancel()`` (or ``cancel()``
    here) ends it with stop reason ``cancelled``. ``async with session.prompt(...) as events``
    also stops it (and frees the session at once) when the block is left early, for example
    with ``break``. Its events always end with one ``Finished`` for a reader that reads on, even
    when the session was closed in between (see ``take_rest``).
    """

    def __init__(self, owner: AgentSession, message: Message) -> None:
        self._owner = owner
        self._message = message
        self._cancel = asyncio.Event()
        self.settled = asyncio.Event()
        """Set once the run has written its last message to the history."""
        self._started = False
        self._events_ref: weakref.ref[AsyncGenerator[Event, None]] | None = None
        self._held: AsyncGenerator[Event, None] | None = None
        self._source: AsyncGenerator[Event, None] | None = None
        self._taken: deque[Event] = deque()
        self._error: Exception | None = None
        self._reading = False

    @property
    def iterator(self) -> AsyncGenerator[Event, None] | None:
        """The events' iterator while someone still holds it (a weak reference, so that an
        iterator abandoned with ``break`` is finalised by the event loop)."""
        return self._events_ref() if self._events_ref is not None else None

    def _iterate(self) -> AsyncGenerator[Event, None]:
        events = self._events()
        self._events_ref = weakref.ref(events)
        return events

    async def __aenter__(self) -> AsyncIterator[Event]:
        self._held = self._iterate()
        return self._held

    async def __aexit__(self, *exc: object) -> None:
        if self._held is not None:
            await self._held.aclose()
            self._held = None

    def cancel(self) -> None:
        self._cancel.set()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    def __await__(self) -> Generator[Any, None, PromptResult]:
        return self.result().__await__()

    async def result(self) -> PromptResult:
        """Run to the end and return how it ended (the events are kept in ``events``)."""
        events = [event async for event in self]
        last = events[-1]
        assert isinstance(last, Finished)  # a run always ends with exactly one Finished
        return PromptResult(last.text, last.stop_reason, last.reason, last.usage, events)

    async def _events(self) -> AsyncGenerator[Event, None]:
        if self._started:
            raise RuntimeError("a PromptRun runs once; call session.prompt() again")
        self._started = True
        session = self._owner.claim(self)
        try:
            run = session.prompt(self._message, cancel=self._cancel, settled=self.settled)
            self._source = run
            async with contextlib.aclosing(run):
                while (event := await self._next()) is not None:
                    yield event
        finally:
            await self._owner.release(self)

    async def _next(self) -> Event | None:
        if self._taken:
            return self._taken.popleft()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        assert self._source is not None
        self._reading = True
        try:
            return await anext(self._source, None)
        finally:
            self._reading = False

    async def take_rest(self) -> bool:
        """Once the run has settled and no one is inside its stream, read the stream to its
        end here and keep the events for the reader. The prompt is then over (its history
        stored, the session's lease released) while its reader still gets every event, up to
        ``Finished``. False when someone is reading the stream right now, or the run has not
        settled."""
        source = self._source
        if source is None or self._reading or not self.settled.is_set():
            return False
        try:
            async for event in source:
                self._taken.append(event)
        except Exception as err:  # the reader's to raise, as it would have been
            self._error = err
        return True


class AgentSession:
    """A session opened by ``Runtime``: prompt it, cancel a prompt, switch model or mode, close.

    Use it as ``async with await runtime.new_session() as session:`` or call ``close()``.
    """

    def __init__(self, session: Session, host: _Host) -> None:
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


class _Host:
    """The task that keeps one session's context open until ``close()``."""

    def __init__(self) -> None:
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    async def open(self, opener: Callable[[], AbstractAsyncContextManager[Session]]) -> Session:
        ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(opener, ready))
        try:
            return await asyncio.shield(ready)
        except asyncio.CancelledError:
            self._task.cancel()
            raise

    async def _hold(
        self,
        opener: Callable[[], AbstractAsyncContextManager[Session]],
        ready: asyncio.Future[Session],
    ) -> None:
        try:
            async with opener() as session:
                ready.set_result(session)
                await self._closing.wait()
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except Exception as err:
            if ready.done():
                log.warning("closing a session failed", exc_info=True)
            else:
                ready.set_exception(err)
        finally:
            self.closed = True

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


async def _wait(event: asyncio.Event) -> None:
    try:
        await asyncio.wait_for(event.wait(), CLOSE_WAIT)
    except TimeoutError:
        log.warning("a cancelled prompt did not end within %s s", CLOSE_WAIT)


async def host_session(
    opener: Callable[[], AbstractAsyncContextManager[Session]],
) -> AgentSession:
    """Open a session in a task of its own and hand back its ``AgentSession``."""
    host = _Host()
    session = await host.open(opener)
    return AgentSession(session, host)
