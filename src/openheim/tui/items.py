"""The items of the conversation view: a user prompt, a streamed Markdown answer, a
thinking block, a tool call with its status and result (a coloured diff for file edits), and
notices as distinct lines. Every text shown is redacted."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from rich.markdown import Markdown as RichMarkdown
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.markup import escape
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from openheim.events import FileDiff, ToolResult
from openheim.redaction.secrets import redact

KEY_ARGUMENTS = ("path", "command", "pattern", "url", "query", "name", "file_path", "agent")
MAX_RESULT = 20_000
"""Characters of a tool result shown when expanded (the rest is cut, saying so)."""
STATUS_MARKS = {"running": "⋯", "completed": "✓", "failed": "✗", "denied": "⊘", "cancelled": "⊘"}


def key_argument(arguments: Mapping[str, Any]) -> str:
    """The argument that says what a call is about (its path, command, ...), one line."""
    for key in KEY_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.splitlines()[0]
            return redact(first if len(first) <= 80 else first[:79] + "…")
    return ""


def diff_text(diff: FileDiff) -> str:
    """A unified diff of a file change."""
    name = Path(diff.path).name
    before = (diff.old_text or "").splitlines(keepends=True)
    after = diff.new_text.splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))


class UserItem(Static):
    """What the user sent."""

    def __init__(self, text: str) -> None:
        super().__init__(Text("> " + redact(text)), classes="user")


class NoticeItem(Static):
    """A notice, a retry, a trimmed context or an abnormal stop: one line, styled by ``kind``."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(Text(redact(text)), classes=f"notice {kind}")


class MarkdownPart(Widget):
    """Markdown texts (redacted; code blocks highlighted), one after the other, drawn from
    lines rendered once per width: a text added renders only itself, and nothing already
    shown is parsed, measured or drawn from scratch again."""

    DEFAULT_CSS = "MarkdownPart { height: auto; }"

    def __init__(self, text: str = "") -> None:
        super().__init__(classes="answer-part")
        self.texts: list[str] = [text] if text else []
        self._lines: dict[int, list[Strip]] = {}
        """The rendered lines by width (a scrollbar coming and going changes the width)."""

    def set_text(self, text: str) -> None:
        """Show ``text`` alone (the part being streamed)."""
        self.texts = [text] if text else []
        self._lines.clear()
        self.refresh(layout=True)

    def append(self, text: str) -> None:
        """Show ``text`` after what is shown; only it is rendered."""
        self.texts.append(text)
        for width, lines in self._lines.items():
            lines += self._render_text(text, width, first=len(self.texts) == 1)
        self.refresh(layout=True)

    def _render_text(self, text: str, width: int, first: bool) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(max(width, 1))
        rendered = console.render_lines(markdown(text), options, pad=False)
        gap = [] if first else [Strip.blank(0)]
        return gap + [Strip(line) for line in rendered]

    def lines(self, width: int) -> list[Strip]:
        found = self._lines.get(width)
        if found is None:
            found = []
            for n, text in enumerate(self.texts):
                found += self._render_text(text, width, first=n == 0)
            self._lines[width] = found
            if len(self._lines) > 4:
                del self._lines[next(iter(self._lines))]
        return found

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render_line(self, y: int) -> Strip:
        lines = self.lines(self.size.width)
        return lines[y] if y < len(lines) else Strip.blank(self.size.width)


class AnswerItem(Vertical):
    """An answer as Markdown, streamed.

    The answer is two widgets: the finished blocks and the part being streamed. Once that
    part grows past ``PART_SIZE`` and ends a block (a blank line outside a code fence), it
    moves to the finished blocks, rendered once, and a new part starts. So a draw parses at
    most one part and the answer stays two widgets: the cost does not grow with the answer's
    length. Deltas that come faster than ``FRAME`` are drawn together, at most one draw a
    frame; ``flush`` draws what is left at once."""

    DEFAULT_CSS = "AnswerItem { height: auto; }"

    def __init__(self, text: str = "") -> None:
        super().__init__(classes="answer")
        self.text = ""
        self._tail = ""
        self._finished: list[str] = []
        """Parts cut off the tail and not drawn yet."""
        self._done = MarkdownPart()
        self._live = MarkdownPart()
        self._pace = Pacer(self, self._draw)
        if text:
            self._take(text)
            self._done.texts, self._finished = self._finished, []
            self._live.texts = [self._tail] if self._tail else []

    def compose(self) -> ComposeResult:
        yield self._done
        yield self._live

    def _take(self, text: str) -> None:
        self.text += text
        self._tail += text
        while (cut := block_end(self._tail)) is not None:
            self._finished.append(self._tail[:cut])
            self._tail = self._tail[cut:]

    def feed(self, text: str) -> None:
        """Add a delta: drawn now, or with the next frame if one was drawn just before."""
        self._take(text)
        self._pace.due()

    def flush(self) -> None:
        """Draw every delta taken."""
        self._pace.now()

    def _draw(self) -> None:
        for part in self._finished:
            self._done.append(part)
        self._finished = []
        self._live.set_text(self._tail)


FRAME = 1 / 30
"""Seconds between two draws of a streamed answer."""


class Pacer:
    """Draws a streamed widget at most once a ``FRAME``: a delta that comes sooner after the
    last draw is drawn with the next frame, together with those that follow it."""

    def __init__(self, widget: Widget, draw: Callable[[], None]) -> None:
        self._widget = widget
        self._draw = draw
        self._drawn_at = 0.0
        self._timer: Timer | None = None

    def due(self) -> None:
        """Something new to draw: now, or at the next frame."""
        wait = FRAME - (time.monotonic() - self._drawn_at)
        if wait <= 0:
            self.now()
        elif self._timer is None:
            self._timer = self._widget.set_timer(wait, self.now)

    def now(self) -> None:
        """Draw at once."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._drawn_at = time.monotonic()
        self._draw()


PART_SIZE = 400
"""Characters after which a streamed part is frozen at the next block end."""


def block_end(text: str) -> int | None:
    """Where to cut ``text`` into a frozen part and the rest: after the last blank line past
    ``PART_SIZE`` that lies outside a code fence; None when there is no such place yet."""
    if len(text) < PART_SIZE:
        return None
    at = text.rfind("\n\n")
    while at >= PART_SIZE // 2:
        head = text[: at + 2]
        if _fences(head) % 2 == 0:
            return at + 2
        at = text.rfind("\n\n", 0, at)
    return None


def _fences(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.lstrip().startswith(("```", "~~~")))


class _Markdown(RichMarkdown):
    """Rich's Markdown with one parser for all texts: building a parser costs more than
    parsing a streamed part. It sets what Rich's own ``__init__`` sets, without building one."""

    _parser: MarkdownIt | None = None

    def __init__(self, markup: str) -> None:  # Rich's own builds a parser
        if _Markdown._parser is None:
            _Markdown._parser = MarkdownIt().enable("strikethrough").enable("table")
        self.markup = markup
        self.parsed = _Markdown._parser.parse(markup)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME


CODE_THEME = "monokai"


def markdown(text: str) -> RichMarkdown:
    """``text`` (redacted) as a Rich Markdown renderable, code blocks highlighted."""
    return _Markdown(redact(text))


class ThinkingItem(Collapsible):
    """The model's thinking (collapsed when replayed, open while it streams); its text grows
    as it arrives, drawn at most once a ``FRAME`` (each draw lays out the whole text)."""

    def __init__(self, text: str = "", collapsed: bool = True) -> None:
        self.body = Static(Text(redact(text)), classes="thinking-text")
        super().__init__(self.body, title="thinking", collapsed=collapsed, classes="thinking")
        self.text = text
        self._pace = Pacer(self, self._draw)

    def feed(self, text: str) -> None:
        """Add a delta: drawn now, or with the next frame if one was drawn just before."""
        self.text += text
        self._pace.due()

    def flush(self) -> None:
        """Draw all the text taken."""
        self._pace.now()

    def _draw(self) -> None:
        self.body.update(Text(redact(self.text)))


class ToolItem(Collapsible):
    """One tool call: name, key argument and status in the title; the arguments and the full
    result (or the diff of a file edit) when expanded. ``result`` builds it finished (a
    replayed call)."""

    def __init__(
        self,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any],
        result: ToolResult | None = None,
    ) -> None:
        self.call_id = call_id
        self.tool = name
        self.key = key_argument(arguments)
        self.status = result.status if result is not None else "running"
        shown = redact(json.dumps(dict(arguments), indent=2, ensure_ascii=False))
        parts = [Static(Text(shown), classes="tool-args")]
        parts += result_parts(result) if result is not None else []
        self.detail = Vertical(*parts, classes="tool-detail")
        heading = self._heading()
        super().__init__(self.detail, title=heading, collapsed=True, classes=f"tool {self.status}")

    def _heading(self) -> str:
        """``✓ name key``, with the status named when it is not "completed"; escaped, as the
        title is markup and the key comes from the model."""
        mark = STATUS_MARKS.get(self.status, "?")
        said = "" if self.status == "completed" else f" ({self.status})"
        return escape(f"{mark} {self.tool} {self.key}".rstrip() + said)

    async def finish(self, result: ToolResult) -> None:
        """The call ended: its status in the title, its result (or diff) inside."""
        self.status = result.status
        self.title = self._heading()
        self.remove_class("running")  # not set_classes: it would drop the collapsed state
        self.add_class(result.status)
        await self.detail.mount_all(result_parts(result))


def result_parts(result: ToolResult) -> list[Static]:
    """A result's widgets: its text (cut at ``MAX_RESULT``) and, for a file edit, the diff."""
    content = redact(result.content)
    if len(content) > MAX_RESULT:
        content = content[:MAX_RESULT] + f"\n… ({len(content) - MAX_RESULT} more characters)"
    parts = [Static(Text(content), classes="tool-result")]
    if result.diff is not None:
        diff = redact(diff_text(result.diff))
        parts.append(Static(Syntax(diff, "diff", word_wrap=True), classes="diff"))
    return parts


class WelcomeItem(Static):
    """The line the conversation opens with: model, work folder and how to get help (no
    notice: nothing happened)."""

    def __init__(self, text: str) -> None:
        super().__init__(Text(redact(text)), classes="welcome")
