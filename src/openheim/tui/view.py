"""The conversation view: events in, items out. Text deltas stream into the current answer,
thinking into its own block, open while it streams (or hidden, with ``[tui] show_thinking =
false``), each tool call becomes an item its result completes (an edit the person just allowed
opens on its diff), and notices, retries, trimmed context and abnormal stops become lines of
their own."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget

from openheim.events import (
    ContextCompacted,
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
    compaction_line,
    notice_line,
)
from openheim.runtime import approvals
from openheim.tui.items import AnswerItem, NoticeItem, ThinkingItem, ToolItem, UserItem

if TYPE_CHECKING:
    from openheim.runtime import replay

PAGE = 60
"""Replayed items mounted at a time."""


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
    if isinstance(event, ContextCompacted):
        return compaction_line(event), "info" if event.method == "summary" else "warning"
    if isinstance(event, ContextTrimmed):
        return (
            f"left {event.dropped} of {event.total} older messages out to fit the context window",
            "info",
        )
    if isinstance(event, Finished) and event.stop_reason != "end_turn":
        detail = f" ({event.reason})" if event.reason else ""
        return f"stopped: {event.stop_reason}{detail}", "stop"
    if isinstance(event, Finished) and event.denied:
        return approvals.closing_warning(event.denied), "warning"
    if isinstance(event, Failed):
        return f"error: {event.message}", "error"
    return None


class Conversation(VerticalScroll):
    """The scrolling conversation; ``verbose`` shows or hides tool items. Focused, ``j`` and
    ``k`` scroll it.

    It is anchored to its end: every layout (a streamed answer's draw included, which may come
    a frame after its delta) keeps the end in view until the user scrolls up; scrolling back
    to the end, or a new item, anchors it again."""

    BINDINGS = [Binding("j", "scroll_down", show=False), Binding("k", "scroll_up", show=False)]

    def __init__(self, approved: set[str] | None = None, show_thinking: bool = True) -> None:
        """``approved``: the ids of calls a person allowed, shared with the approval queue (a
        result shown leaves it); ``show_thinking``: stream the thinking open, or hide it."""
        super().__init__(id="conversation")
        self.approved = approved if approved is not None else set()
        self.show_thinking = show_thinking
        self.answer: AnswerItem | None = None
        self.thinking: ThinkingItem | None = None
        self.tools: dict[str, ToolItem] = {}
        self.verbose = True
        self.seen: set[Notice] = set()
        self.earlier: list[Builder] = []
        """Replayed items not mounted yet (a page is mounted when scrolled to the top)."""
        self.marker: NoticeItem | None = None
        self._loading = False

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, item: Widget) -> None:
        if isinstance(item, ToolItem):
            item.display = self.verbose
        await self.mount(item)
        self.scroll_end(animate=False)

    async def user(self, text: str) -> None:
        self.end_stream()
        await self.add(UserItem(text))

    async def line(self, text: str, kind: str = "info") -> None:
        self.end_stream()
        await self.add(NoticeItem(text, kind))

    async def show(self, event: Event) -> None:
        """One event of a run."""
        if isinstance(event, TextDelta):
            await self._text(event.text)
        elif isinstance(event, ThinkingDelta):
            await self._thinking(event.text)
        elif isinstance(event, ToolCall):
            self.end_stream()
            item = ToolItem(event.id, event.name, event.arguments)
            self.tools[event.id] = item
            await self.add(item)
        elif isinstance(event, ToolResult):
            await self._result(event)
        elif isinstance(event, Notice) and event in self.seen:
            return
        else:
            await self._other(event)

    async def replay(self, events: Iterable[replay.Replayed]) -> None:
        """A restored conversation, shown as it was (tool items included). The last ``PAGE``
        items are mounted at once; earlier ones a page at a time as one scrolls to the top,
        so a long session opens as fast as a short one."""
        self.end_stream()
        items = replayed_items(events)
        self.earlier = items[:-PAGE]
        if self.earlier:
            self.marker = NoticeItem(self._earlier_line(), "earlier")
            await self.mount(self.marker)
        await self.mount_all(self._built(items[-PAGE:]))
        self.scroll_end(animate=False)

    def _built(self, builders: list[Builder]) -> list[Widget]:
        widgets = [build() for build in builders]
        for widget in widgets:
            if isinstance(widget, ToolItem):
                widget.display = self.verbose
        return widgets

    def _earlier_line(self) -> str:
        return f"↑ {len(self.earlier)} earlier items: scroll up to show them"

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new <= 0 and self.earlier and not self._loading:
            self._loading = True
            self.call_later(self.show_earlier)

    async def show_earlier(self) -> None:
        """Mount the page of replayed items before the first one shown."""
        page = self._built(self.earlier[-PAGE:])
        self.earlier = self.earlier[:-PAGE]
        marker = self.marker
        if marker is not None and page:
            await self.mount_all(page, after=marker)
            if self.earlier:
                marker.update(self._earlier_line())
            else:
                await marker.remove()
                self.marker = None
            self.scroll_to_widget(page[-1], animate=False, top=True)
        self._loading = False

    async def _other(self, event: Event) -> None:
        if isinstance(event, Notice):
            self.seen.add(event)
        shown = event_line(event)
        if shown is not None:
            await self.line(*shown)
        elif isinstance(event, Finished):
            self.end_stream()

    async def _text(self, text: str) -> None:
        self._end_thinking()
        if self.answer is None:
            self.answer = AnswerItem()
            await self.add(self.answer)
        self.answer.feed(text)

    async def _thinking(self, text: str) -> None:
        if self.thinking is None:
            self.end_stream()
            self.thinking = ThinkingItem(collapsed=False)
            self.thinking.display = self.show_thinking
            await self.add(self.thinking)
        self.thinking.feed(text)

    async def _result(self, event: ToolResult) -> None:
        item = self.tools.pop(event.id, None)
        if item is None:
            item = ToolItem(event.id, event.name, {})
            await self.add(item)
        await item.finish(event)
        if event.id in self.approved:
            self.approved.discard(event.id)
            if event.diff is not None:  # the edit just allowed: its diff in view
                item.collapsed = False

    def end_stream(self) -> None:
        """End the streaming answer and thinking (what they hold back is drawn): the next text
        starts new ones."""
        self._end_thinking()
        if self.answer is not None:
            self.answer.flush()
            self.answer = None

    def _end_thinking(self) -> None:
        """The thinking streamed is over: what it holds back is drawn."""
        if self.thinking is not None:
            self.thinking.flush()
            self.thinking = None

    def set_verbose(self, verbose: bool) -> None:
        self.verbose = verbose
        for item in self.query(ToolItem):
            item.display = verbose

    async def clear(self) -> None:
        self.end_stream()
        self.tools.clear()
        self.earlier, self.marker = [], None
        await self.remove_children()


Builder: TypeAlias = Callable[[], Widget]
"""Makes one replayed item when it is shown (widgets are built only for the pages shown)."""


@dataclass
class _Call:
    """A replayed tool call and, once met, its result."""

    call: ToolCall
    result: ToolResult | None = None

    def build(self) -> Widget:
        call = self.call
        return ToolItem(call.id, call.name, call.arguments, self.result)


def replayed_items(events: Iterable[replay.Replayed]) -> list[Builder]:
    """The items of a stored conversation, to build: its text deltas joined into answers, each
    tool call with its result."""
    from openheim.runtime import replay  # replaying needs the runtime, start-up not

    items: list[Builder] = []
    text: list[str] = []
    calls: dict[str, _Call] = {}

    def flush() -> None:
        if text:
            items.append(functools.partial(AnswerItem, "".join(text)))
            text.clear()

    for event in events:
        if isinstance(event, TextDelta):
            text.append(event.text)
            continue
        flush()
        if isinstance(event, replay.UserTurn):
            items.append(functools.partial(UserItem, event.text))
        elif isinstance(event, ThinkingDelta):
            items.append(functools.partial(ThinkingItem, event.text))
        elif isinstance(event, ToolCall):
            calls[event.id] = pending = _Call(event)
            items.append(pending.build)
        elif event.id in calls:
            calls.pop(event.id).result = event
    flush()
    return items
