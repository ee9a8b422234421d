"""One ``session/prompt`` turn: run the prompt on the runtime and stream its events to the
client as ``session/update`` notifications. This is a translation, not a second loop. The
answer and each notice are separate agent messages (``openheim.acp.notices``)."""

from __future__ import annotations

from pathlib import Path

from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from openheim.acp.notices import AgentMessages, Folders
from openheim.acp.translate import event_update, tool_call_done, tool_call_start, usage_update
from openheim.events import (
    ContextCompacted,
    CostUpdate,
    Event,
    Finished,
    Notice,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    compaction_line,
)
from openheim.events import UsageUpdate as UsageEvent
from openheim.messages import Message, StopReason
from openheim.providers.windows import context_window
from openheim.redaction.stream import StreamRedactor
from openheim.runtime import Session
from openheim.store.base import title_from

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
    | SessionInfoUpdate
)


class Turn:
    """Streams one prompt of ``session`` to the client.

    Text and thinking deltas pass through a ``StreamRedactor`` each, so a secret the model
    streams in pieces reaches the editor redacted; what a stream holds back is sent before any
    other update. ``folders`` are openheim's own, which notices name rather than show."""

    def __init__(
        self, conn: Client, session_id: str, session: Session, cwd: Path, folders: Folders = ()
    ) -> None:
        self._conn = conn
        self._id = session_id
        self._session = session
        self._cwd = cwd
        self._in_context = 0
        chosen = session.provider_settings
        self._window = context_window(chosen, session.model) if chosen is not None else None
        self._streams = {TextDelta: StreamRedactor(), ThinkingDelta: StreamRedactor()}
        self._messages = AgentMessages(folders)

    async def run(self, message: Message) -> StopReason:
        """Run the prompt; the stop reason of its ``Finished`` event."""
        first = not self._session.history
        if first and (title := title_from(message)):
            await self._send(SessionInfoUpdate(session_update="session_info_update", title=title))
        stop: StopReason = "end_turn"
        async for event in self._session.prompt(message):
            await self._forward(event)
            if isinstance(event, Finished):
                stop = event.stop_reason
        return stop

    async def _forward(self, event: Event) -> None:
        for kind, stream in self._streams.items():
            if not isinstance(event, kind):
                await self._stream(kind(stream.flush()))
        if isinstance(event, TextDelta | ThinkingDelta):
            await self._stream(type(event)(self._streams[type(event)].feed(event.text)))
        elif isinstance(event, ToolCall):
            await self._send(tool_call_start(event, self._cwd))
        elif isinstance(event, ToolResult):
            await self._send(tool_call_done(event))
        elif isinstance(event, UsageEvent):
            usage = event.usage
            self._in_context = (
                usage.input_tokens
                + usage.cache_read_tokens
                + usage.cache_write_tokens
                + usage.output_tokens
            )
            await self._usage(None)
        elif isinstance(event, CostUpdate):
            await self._usage(event.session_cost)
        elif isinstance(event, Notice):
            await self._send(self._messages.notice(event))
        elif isinstance(event, ContextCompacted):
            await self._send(self._messages.notice(Notice(compaction_line(event), "info")))

    async def _stream(self, delta: TextDelta | ThinkingDelta) -> None:
        """Send the redacted text a stream let out, if any."""
        if not delta.text:
            return
        if isinstance(delta, TextDelta):
            await self._send(self._messages.text(delta.text))
        elif (update := event_update(delta)) is not None:
            await self._send(update)

    async def _usage(self, cost: float | None) -> None:
        if self._window:
            await self._send(usage_update(self._in_context, self._window, cost))

    async def _send(self, update: Update) -> None:
        await self._conn.session_update(session_id=self._id, update=update)
