"""``PromptRun``: one prompt of a session, and ``PromptResult``, how it ended.

A ``PromptRun`` is lazy: it runs when first iterated or awaited, once. Its events come from the
session's agent loop; the run holds the session (``claim``) while it runs, so a second prompt
is refused, and frees it (``release``) when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openheim.events import Event, Finished
from openheim.handover import Tap
from openheim.messages import Message, StopReason, Usage

if TYPE_CHECKING:
    from openheim.runtime.session import Session
    from openheim.runtime.structured import Attempts


@dataclass(frozen=True)
class PromptResult:
    """How a prompt ended: the final text, the stop reason and the run's usage and events."""

    text: str
    stop_reason: StopReason
    reason: str | None
    usage: Usage
    events: list[Event] = field(default_factory=list)
    output: Any = None
    """With an output schema: the valid JSON value the model handed in."""


class PromptRun:
    """One prompt: iterate it for its events, or await it for its ``PromptResult``.

    It runs when first iterated or awaited, once; ``Session.cancel()`` (or ``cancel()``
    here) ends it with stop reason ``cancelled``. ``async with session.prompt(...) as events``
    also stops it (and frees the session at once) when the block is left early, for example
    with ``break``. Its events always end with one ``Finished`` for a reader that reads on, even
    when the session was closed in between (see ``take_rest``).
    """

    def __init__(
        self,
        owner: Session,
        message: Message,
        cancel: asyncio.Event | None,
        attempts: Attempts | None = None,
    ) -> None:
        self._owner = owner
        self._message = message
        self.attempts = attempts
        """With an output schema: its attempts, and the value once one is accepted."""
        self._cancel = cancel if cancel is not None else asyncio.Event()
        self.settled = asyncio.Event()
        """Set once the run has written its last message to the history."""
        self._started = False
        self._events_ref: weakref.ref[AsyncGenerator[Event, None]] | None = None
        self._held: AsyncGenerator[Event, None] | None = None
        self._source: AsyncGenerator[Event, None] | None = None
        self._taken: deque[Event] = deque()
        self._error: Exception | None = None
        self._reading = False
        self.tap: Tap | None = None
        """Set before the run starts: takes the deltas straight from the run while the reader
        waits for the next event (see ``openheim.handover``); not for a structured prompt."""

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
        output = None if self.attempts is None else self.attempts.outcome(last.stop_reason)
        return PromptResult(last.text, last.stop_reason, last.reason, last.usage, events, output)

    async def _events(self) -> AsyncGenerator[Event, None]:
        if self._started:
            raise RuntimeError("a PromptRun runs once; call session.prompt() again")
        self._started = True
        self._owner.claim(self)
        try:
            run = self._stream()
            self._source = run
            async with contextlib.aclosing(run):
                while (event := await self._next()) is not None:
                    yield event
        finally:
            await self._owner.release(self)

    def _stream(self) -> AsyncGenerator[Event, None]:
        if self.attempts is None:
            return self._owner.stream(self._message, self._cancel, self.settled, self.tap)
        return self._attempts(self.attempts)

    async def _attempts(self, attempts: Attempts) -> AsyncGenerator[Event, None]:
        """Every attempt of a structured prompt, the ``submit`` tool offered meanwhile; each
        attempt after the first has a ``settled`` of its own."""
        from openheim.runtime.structured import SubmitTool, attempt_events, with_instruction

        def turn(message: Message) -> AsyncGenerator[Event, None]:
            if self.settled.is_set():
                self.settled = asyncio.Event()
            return self._owner.stream(message, self._cancel, self.settled)

        with self._owner.offering(SubmitTool(attempts)):
            first = with_instruction(self._message, attempts)
            async with contextlib.aclosing(attempt_events(turn, first, attempts)) as events:
                async for event in events:
                    yield event

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
