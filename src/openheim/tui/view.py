"""The conversation view: events in, items out. Text deltas stream into the current answer,
thinking into its collapsed block, each tool call becomes an item its result completes, and
notices, retries, trimmed context and abnormal stops become lines of their own."""

from __future__ import annotations

from collections.abc import Iterable

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget

from openheim.events import (
    ContextTrimmed,
    Event,
    Failed,
    Finished,
    Notice,
    RetryNotice,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    notice_line,
)
from openheim.runtime.replay import Replayed, UserTurn
from openheim.tui.items import AnswerItem, NoticeItem, ThinkingItem, ToolItem, UserItem


def event_line(event: Event) -> tuple[str, str] | None:
    """The line (and its kind) an event that is not model output shows, if any."""
    if isinstance(event, Notice):
        return notice_line(event), event.level
    if isinstance(event, RetryNotice):
        of = f" of {event.max_retries}" if event.max_retries else ""
        return (
            f"retrying in {event.delay:.1f} s (attempt {event.attempt}{of}): {event.error}",
            "retry",
        )
    if isinstance(event, ContextTrimmed):
        return (
            f"left {event.dropped} of {event.total} older messages out to fit the context window",
            "info",
        )
    if isinstance(event, Finished) and event.stop_reason != "end_turn":
        detail = f" ({event.reason})" if event.reason else ""
        return f"stopped: {event.stop_reason}{detail}", "stop"
    if isinstance(event, Failed):
        return f"error: {event.message}", "error"
    return None


class Conversation(VerticalScroll):
    """The scrolling conversation; ``verbose`` shows or hides tool items. Focused, ``j`` and
    ``k`` scroll it."""

    BINDINGS = [Binding("j", "scroll_down", show=False), Binding("k", "scroll_up", show=False)]

    def __init__(self) -> None:
        super().__init__(id="conversation")
        self.answer: AnswerItem | None = None
        self.thinking: ThinkingItem | None = None
        self.tools: dict[str, ToolItem] = {}
        self.verbose = True
        self.seen: set[Notice] = set()

    async def add(self, item: Widget) -> None:
        if isinstance(item, ToolItem):
            item.display = self.verbose
        await self.mount(item)
        self.scroll_end(animate=False)

    async def user(self, text: str) -> None:
        await self.end_stream()
        await self.add(UserItem(text))

    async def line(self, text: str, kind: str = "info") -> None:
        await self.end_stream()
        await self.add(NoticeItem(text, kind))

    async def show(self, event: Event | Replayed) -> None:
        """One event of a run (or of a replayed conversation)."""
        if isinstance(event, TextDelta):
            await self._text(event.text)
        elif isinstance(event, ThinkingDelta):
            await self._thinking(event.text)
        elif isinstance(event, UserTurn):
            await self.user(event.text)
        elif isinstance(event, ToolCall):
            await self.end_stream()
            item = ToolItem(event.id, event.name, event.arguments)
            self.tools[event.id] = item
            await self.add(item)
        elif isinstance(event, ToolResult):
            await self._result(event)
        elif isinstance(event, Notice) and event in self.seen:
            return
        else:
            await self._other(event)

    async def replay(self, events: Iterable[Replayed]) -> None:
        """A restored conversation, shown as it was (tool items included)."""
        for event in events:
            await self.show(event)
        await self.end_stream()

    async def _other(self, event: Event) -> None:
        if isinstance(event, Notice):
            self.seen.add(event)
        shown = event_line(event)
        if shown is not None:
            await self.line(*shown)
        elif isinstance(event, Finished):
            await self.end_stream()

    async def _text(self, text: str) -> None:
        self.thinking = None
        if self.answer is None:
            self.answer = AnswerItem()
            await self.add(self.answer)
        await self.answer.feed(text)
        if self.is_vertical_scroll_end or self.max_scroll_y - self.scroll_y < 3:
            self.scroll_end(animate=False)

    async def _thinking(self, text: str) -> None:
        if self.thinking is None:
            await self.end_stream()
            self.thinking = ThinkingItem()
            await self.add(self.thinking)
        self.thinking.feed(text)

    async def _result(self, event: ToolResult) -> None:
        item = self.tools.pop(event.id, None)
        if item is None:
            item = ToolItem(event.id, event.name, {})
            await self.add(item)
        await item.finish(event)

    async def end_stream(self) -> None:
        """Close the streaming answer (the next text starts a new one)."""
        self.thinking = None
        if self.answer is not None:
            answer, self.answer = self.answer, None
            await answer.finish()

    def set_verbose(self, verbose: bool) -> None:
        self.verbose = verbose
        for item in self.query(ToolItem):
            item.display = verbose

    async def clear(self) -> None:
        await self.end_stream()
        self.tools.clear()
        await self.remove_children()
