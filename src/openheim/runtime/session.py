"""``Session``: one conversation with an agent, the one session class every surface drives.

``openheim run``, ``openheim acp`` and the library all prompt a ``Session``: ``prompt()`` gives a
``PromptRun`` to iterate for events or await for a ``PromptResult``; ``cancel()``,
``set_model()``, ``set_read_only()`` and ``close()`` act on it between or during prompts;
``compact()`` and ``undo()`` between prompts.

A session runs one prompt at a time: a second prompt in this process is refused, and a stored
session's prompt holds its lease in the store, so a second process gets ``SessionBusy``. The
history writes each message to the store as the loop appends it (``PersistentHistory``).

A session's first prompt starts with ``SessionStarted`` and the session's notices (the
settings' own, then those found while it opened); a later prompt starts with any notice found
since.

A session opened by ``Runtime.open_session`` lives as long as that ``async with`` block; one
opened by ``new_session`` or ``resume_session`` lives in a task of its own (``host``) until
``close()``, so it may be closed from any task.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from openheim.errors import SessionBusy, UndoRefused
from openheim.events import (
    ContextCompacted,
    Event,
    Finished,
    IterationStart,
    Notice,
    SessionStarted,
    TextDelta,
    ThinkingDelta,
)
from openheim.handover import Handover, Tap
from openheim.messages import Message, valid_message
from openheim.runtime.history import PersistentHistory
from openheim.runtime.prompt_run import PromptRun
from openheim.runtime.store_writes import Heartbeat, off_loop, record, release, settle
from openheim.tools.base import Tool, ToolSet

if TYPE_CHECKING:
    from openheim.loop import Agent
    from openheim.providers.base import ProviderSettings
    from openheim.runtime.compaction import Compactor
    from openheim.runtime.turn_watch import TurnWatch
    from openheim.runtime.undo import UndoReport
    from openheim.store.base import Lease, SessionRecord, SessionStore

log = logging.getLogger(__name__)

_A = TypeVar("_A")
_T = TypeVar("_T")

CLOSE_WAIT = 10.0
"""Seconds ``close()`` waits for a cancelled prompt to finish writing its history."""


class Session:
    """An agent and its history: prompt it, cancel a prompt, switch model or mode, close it.

    ``record`` and ``store`` are None for an unsaved session. Use it as
    ``async with await runtime.new_session() as session:`` or call ``close()``.
    """

    def __init__(
        self,
        agent: Agent,
        history: list[Message],
        *,
        record: SessionRecord | None = None,
        store: SessionStore | None = None,
        provider_settings: ProviderSettings | None = None,
        started: SessionStarted | None = None,
        notices: list[Notice] | None = None,
    ) -> None:
        self.agent = agent
        self.history = history
        self.record = record
        self.store = store
        self.provider_settings = provider_settings
        self._started = started
        self._notices = notices if notices is not None else []
        self._told = 0
        self._release: Callable[[], Awaitable[None]] | None = None
        self._closed = False
        self._running: PromptRun | None = None
        self._close_pending = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._all_tools = agent.tools
        self._on_close: list[Callable[[Session], None]] = []
        self.compactor: Compactor | None = None
        """What compacts the history in what the model is sent (``runtime.compaction``)."""
        self.watch: TurnWatch | None = None
        """Hooks and checkpoints around each prompt (``runtime.turn_watch``), if any."""

    @property
    def id(self) -> str | None:
        """The stored session's id (None when sessions are not saved)."""
        return self.record.id if self.record else None

    @property
    def model(self) -> str:
        return self.agent.model

    @property
    def busy(self) -> bool:
        """Whether a prompt is running."""
        return self._running is not None

    @property
    def read_only(self) -> bool:
        return self.agent.tools is not self._all_tools

    @property
    def notices(self) -> tuple[Notice, ...]:
        """Every notice of this session so far: the settings' own (an untrusted project's keys
        ignored) and those found while it opened (an MCP server unavailable, a rule ignored)."""
        return tuple(self._notices)

    @property
    def session(self) -> Session:
        """Deprecated: the session itself (it used to be the runtime's session underneath)."""
        warnings.warn(
            "session.session is deprecated: the session is itself the runtime's session",
            DeprecationWarning,
            stacklevel=2,
        )
        return self

    def prompt(
        self,
        content: str | Message,
        *,
        cancel: asyncio.Event | None = None,
        output_schema: Mapping[str, Any] | None = None,
        output_retries: int = 3,
    ) -> PromptRun:
        """Describe a prompt; it runs when iterated or awaited. Setting ``cancel`` (as
        ``openheim run`` does on Ctrl-C) cancels it like ``cancel()``.

        With ``output_schema`` (a JSON schema) the answer must be a JSON value valid against
        it, handed in through a ``submit`` tool and retried with the validation errors up to
        ``output_retries`` times (``runtime.structured``); the awaited result's ``output`` is
        the parsed value, and awaiting raises ``NoValidOutput`` when there is none. A bad
        schema raises ``ConfigError`` here.

        Each lone surrogate in the prompt (``\\ud800`` from a client, an undecodable byte) is
        made U+FFFD before it enters the history: no provider could be sent it."""
        message = valid_message(content if isinstance(content, Message) else Message.user(content))
        if output_schema is None:
            return PromptRun(self, message, cancel)
        from openheim.runtime.structured import output_schema as attempts_for

        return PromptRun(self, message, cancel, attempts_for(output_schema, output_retries))

    @contextlib.contextmanager
    def offering(self, tool: Tool) -> Iterator[None]:
        """Offer ``tool`` (read-only mode too, when it is read-only) for the block's length."""
        every, read_only = self._all_tools, self.read_only
        self._all_tools = ToolSet([*(t for t in every if t.name != tool.name), tool])
        self.set_read_only(read_only)
        try:
            yield
        finally:
            read_only = self.read_only
            self._all_tools = every
            self.set_read_only(read_only)

    def cancel(self) -> None:
        """Cancel the running prompt, if any: it ends with stop reason ``cancelled``."""
        if self._running is not None:
            self._running.cancel()

    def set_model(self, model: str) -> None:
        """Use ``model`` (of the same provider) from the next model call on."""
        self.agent.model = model
        if self.record is not None and self.store is not None:
            self.store.update(self.record.id, model=model)

    def set_read_only(self, read_only: bool) -> None:
        """Offer only read-only tools (a planning mode), or every tool again."""
        tools = self._all_tools
        if read_only:
            tools = ToolSet(t for t in tools if t.capabilities.read_only)
        self.agent.tools = tools

    async def compact(self) -> ContextCompacted | None:
        """Compact the conversation now, keeping its latest turn; None when there is nothing
        older to compact. The history itself keeps every message (``runtime.compaction``)."""
        if self.compactor is None:
            return None
        if self._running is not None:
            raise SessionBusy(self.id or "unsaved", pid=os.getpid(), host=socket.gethostname())
        from openheim.runtime.compaction import request_for

        with await self._lease():
            return await self.compactor.compact(request_for(self.agent, self.history), forced=True)

    async def undo(self, turns: int = 1, *, force: bool = False) -> UndoReport:
        """Undo the last ``turns`` turns: their files restored from the checkpoints, the stored
        and the live conversation rewound to before them (``runtime.undo``); the report says
        what was restored. Raises ``UndoRefused`` (nothing changed) when a file was changed
        outside openheim since (unless ``force``), there are fewer turns, or the session is not
        stored; ``SessionBusy`` while a prompt runs."""
        if self._running is not None:
            raise SessionBusy(self.id or "unsaved", pid=os.getpid(), host=socket.gethostname())
        recorder = self.watch.recorder if self.watch is not None else None
        if self.store is None or self.record is None or recorder is None:
            raise UndoRefused(
                "this session is not stored, so it has no checkpoints",
                hint="undo needs save_sessions = true",
            )
        from openheim.runtime.undo import undo

        report = await asyncio.to_thread(
            undo, self.store, recorder.store, self.record.id, turns=turns, force=force
        )
        del self.history[report.kept_messages :]  # the store is rewound already
        return report

    def claim(self, run: PromptRun) -> None:
        """Mark ``run`` as the running prompt; a second concurrent prompt is refused."""
        if self._closed or self._close_pending:
            raise RuntimeError("this session is closed; open or resume it again")
        if self._running is not None:
            raise SessionBusy(self.id or "unsaved", pid=os.getpid(), host=socket.gethostname())
        self._running = run
        self._idle.clear()

    async def release(self, run: PromptRun) -> None:
        """``run`` ended; a close asked for by its own reader happens now."""
        if self._running is not run:
            return
        self._running = None
        self._idle.set()
        if self._close_pending:
            await self._close_now()

    async def stream(
        self,
        message: Message,
        cancel: asyncio.Event,
        settled: asyncio.Event,
        tap: Tap | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The events of one prompt (the last one is ``Finished``), for the ``PromptRun`` that
        holds the session. ``settled`` is set once the run has written its last message, even
        if no one reads on. ``tap`` takes the deltas the reader would only pass on, after the
        news (see ``openheim.handover``).

        The news comes first: on the first prompt ``SessionStarted``, then every notice not
        given yet. The run's task is started before (it waits for the reader at its first
        event), so a cancel or a close while the news is read ends the run as at any event."""
        with await self._lease() as lease:
            watch = self.watch
            if watch is not None:
                message = await watch.prompt(message, len(self.history), cancel)
                if watch.blocked is not None:  # by the user_prompt hook: no history, no run
                    settled.set()
                    for news in [*self._news(), *watch.refusal()]:
                        yield news
                    return
            await self._record(message)
            handover = Handover()
            run = self.agent.run(self.history, cancel=cancel, settled=settled, handover=handover)
            if watch is not None:
                run = watch.events(run)
                tap = watch.guard(tap) if tap is not None else None
            heartbeat, history, over = Heartbeat(lease, self.store), self.history, False
            heartbeat.start()
            if tap is not None and isinstance(history, PersistentHistory):
                tap = _stored_first(history, tap)
            try:
                async with contextlib.aclosing(run) as events:  # closed with us: repaired now
                    event = await anext(events, None)
                    for news in self._news():
                        yield news
                    handover.tap = tap
                    while event is not None:
                        if isinstance(history, PersistentHistory) and history.unsaved:
                            await history.saved()  # nothing after a message before it is stored
                        if isinstance(event, IterationStart):
                            await heartbeat.beat()
                        elif isinstance(event, Finished):  # the prompt is over once it is told
                            over = True
                            heartbeat.stop()
                            await self._settle(lease)
                        yield event
                        event = await anext(events, None)
            finally:
                heartbeat.stop()
                if not over:
                    await self._settle(lease)

    def _news(self) -> list[Event]:
        """What has not been told yet: ``SessionStarted`` once, then the notices not given."""
        news: list[Event] = [self._started] if self._started is not None else []
        news += self._notices[self._told :]
        self._started, self._told = None, len(self._notices)
        return news

    async def _lease(self) -> contextlib.AbstractContextManager[Lease | None]:
        """The prompt's lease on a stored session (taken off the event loop)."""
        if self.store is None or self.record is None:
            return contextlib.nullcontext()
        acquire = functools.partial(self.store.acquire, self.record.id)
        return await off_loop(self.store, acquire, undo=release)

    async def _record(self, message: Message) -> None:
        """Append the prompt's message to the history (a stored one off the event loop)."""
        await record(self.history, message)

    async def _settle(self, lease: Lease | None) -> None:
        """The prompt is over: its messages stored, then its totals (and the lease given
        back), off the event loop (``runtime.store_writes``)."""
        if self.store is not None and self.record is not None:
            await settle(self.store, self.record.id, self.history, self.agent.meter, lease)

    def hosted(self, release: Callable[[], Awaitable[None]]) -> None:
        """``close()`` also calls ``release`` (it ends the task that hosts the session)."""
        self._release = release

    def ended(self) -> None:
        """What the session opened is closed: it refuses prompts from now on."""
        self._closed = True

    def on_close(self, callback: Callable[[Session], None]) -> None:
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
        an event right then closes the session once it has taken the last one. A session of
        ``Runtime.open_session`` refuses prompts after close(); what it opened is closed when
        its ``async with`` block ends."""
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
        self._closed = True
        if self._release is not None:
            await self._release()
        while self._on_close:
            self._on_close.pop()(self)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _wait(event: asyncio.Event) -> None:
    try:
        await asyncio.wait_for(event.wait(), CLOSE_WAIT)
    except TimeoutError:
        log.warning("a cancelled prompt did not end within %s s", CLOSE_WAIT)


def _stored_first(history: PersistentHistory, tap: Tap) -> Tap:
    """``tap``, refusing a delta while a message of the run may not be stored yet: that delta
    goes through ``stream``, which hands nothing on after a message before it is stored."""

    def stored(delta: TextDelta | ThinkingDelta) -> bool:
        return not history.unsaved and tap(delta)

    return stored
