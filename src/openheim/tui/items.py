"""The items of the conversation view: a user prompt, a streamed Markdown answer, a collapsed
thinking block, a tool call with its status and result (a coloured diff for file edits), and
notices as distinct lines. Every text shown is redacted."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from openheim.events import FileDiff, ToolResult
from openheim.secrets import redact

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


class AnswerItem(Markdown):
    """An answer streamed as Markdown: deltas go through a ``MarkdownStream``, which batches
    them so each frame parses only the new tail (the cost per delta does not grow with the
    answer)."""

    def __init__(self) -> None:
        super().__init__("", classes="answer")
        self._stream: MarkdownStream | None = None
        self.text = ""

    async def feed(self, text: str) -> None:
        self.text += text
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(text)

    async def finish(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None


class ThinkingItem(Collapsible):
    """The model's thinking, collapsed; its text grows while it streams."""

    def __init__(self) -> None:
        self.body = Static("", classes="thinking-text")
        super().__init__(self.body, title="thinking", collapsed=True, classes="thinking")
        self.text = ""

    def feed(self, text: str) -> None:
        self.text += text
        self.body.update(Text(redact(self.text)))


class ToolItem(Collapsible):
    """One tool call: name, key argument and status in the title; the arguments and the full
    result (or the diff of a file edit) when expanded."""

    def __init__(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        self.call_id = call_id
        self.tool = name
        self.key = key_argument(arguments)
        self.status = "running"
        shown = redact(json.dumps(dict(arguments), indent=2, ensure_ascii=False))
        self.detail = Vertical(Static(Text(shown), classes="tool-args"))
        super().__init__(self.detail, title=self._heading(), collapsed=True, classes="tool running")

    def _heading(self) -> str:
        mark = STATUS_MARKS.get(self.status, "?")
        return f"{mark} {self.tool} {self.key}".rstrip() + f"  [{self.status}]"

    async def finish(self, result: ToolResult) -> None:
        """The call ended: its status in the title, its result (or diff) inside."""
        self.status = result.status
        self.title = self._heading()
        self.set_classes(f"tool {result.status}")
        content = redact(result.content)
        if len(content) > MAX_RESULT:
            content = content[:MAX_RESULT] + f"\n… ({len(content) - MAX_RESULT} more characters)"
        await self.detail.mount(Static(Text(content), classes="tool-result"))
        if result.diff is not None:
            diff = redact(diff_text(result.diff))
            await self.detail.mount(Static(Syntax(diff, "diff", word_wrap=True), classes="diff"))
