"""Each CLI's JSON-lines stream read into text deltas, progress, usage and one final result.

A line that is not a JSON object (a banner, a warning a CLI prints on stdout) is logged at
debug level and never becomes answer text. The streams:

- Claude Code (``stream-json`` with partial messages): ``stream_event`` lines carry the
  Messages API's raw events (``text_delta`` pieces), ``assistant`` lines the whole message
  (its text is used only when no piece of it streamed), and one ``result`` line the final
  text, ``is_error``, the session id, the cost and the usage of the whole run.
- Codex (``exec --json``): ``thread.started`` (the thread id), ``item.completed`` items
  (``agent_message`` text, ``command_execution``, ``file_change``, ...), ``turn.completed``
  with the usage and ``turn.failed`` / ``error`` lines.
- OpenCode (``run --format json``): ``step_start``, ``text`` parts, ``tool_use`` parts,
  ``step_finish`` with tokens and cost, and ``error``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from openheim.formats import safejson
from openheim.messages import Usage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CliText:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True)
class CliProgress:
    """Something the CLI did (a tool it used, a command it ran), as one line."""

    line: str


CliEvent: TypeAlias = CliText | CliProgress


@dataclass
class CliOutcome:
    """What the stream said by its end: the final text, usage, session id, cost, and the
    error the CLI reported (None when it reported none)."""

    text: str = ""
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None
    cost_usd: float | None = None
    error: str | None = None
    finished: bool = False
    """Whether the CLI reported the end of its run (a result line, a completed turn)."""


class StreamParser(Protocol):
    """Reads one CLI's stream line by line into events, collecting the outcome."""

    outcome: CliOutcome

    def feed(self, record: dict[str, Any]) -> list[CliEvent]: ...


def parse_line(line: bytes, parser: StreamParser) -> list[CliEvent]:
    """The events of one line of output; a line that is no JSON object is logged, not shown."""
    text = line.decode("utf-8", errors="replace").strip()
    if not text:
        return []
    try:
        record = safejson.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        log.debug("CLI output line that is not a JSON object, ignored: %.200s", text)
        return []
    return parser.feed(record)


def _int(data: Any, key: str) -> int:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(data: Any, key: str) -> str | None:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


class ClaudeParser:
    """Claude Code's ``stream-json`` lines."""

    def __init__(self) -> None:
        self.outcome = CliOutcome()
        self._streamed = False

    def feed(self, record: dict[str, Any]) -> list[CliEvent]:
        kind = record.get("type")
        self.outcome.session_id = _str(record, "session_id") or self.outcome.session_id
        if kind == "stream_event":
            return self._event(record.get("event"))
        if kind == "assistant":
            return self._message(record.get("message"))
        if kind == "result":
            self._result(record)
        return []

    def _event(self, event: Any) -> list[CliEvent]:
        if _str(event, "type") == "message_start":
            self._streamed = False
        delta = event.get("delta") if isinstance(event, dict) else None
        if _str(delta, "type") == "text_delta" and (text := _str(delta, "text")):
            self._streamed = True
            return [CliText(text)]
        return []

    def _message(self, message: Any) -> list[CliEvent]:
        blocks = message.get("content") if isinstance(message, dict) else None
        events: list[CliEvent] = []
        for block in blocks if isinstance(blocks, list) else []:
            kind = _str(block, "type")
            if kind == "text" and not self._streamed and (text := _str(block, "text")):
                events.append(CliText(text))
            elif kind == "tool_use":
                events.append(CliProgress(f"tool {_str(block, 'name') or '?'}"))
        return events

    def _result(self, record: dict[str, Any]) -> None:
        out = self.outcome
        out.finished = True
        out.text = _str(record, "result") or ""
        usage = record.get("usage")
        out.usage = Usage(
            _int(usage, "input_tokens"),
            _int(usage, "output_tokens"),
            _int(usage, "cache_read_input_tokens"),
            _int(usage, "cache_creation_input_tokens"),
        )
        cost = record.get("total_cost_usd")
        out.cost_usd = float(cost) if isinstance(cost, int | float) else None
        if record.get("is_error") or record.get("subtype") not in (None, "success"):
            out.error = out.text or f"Claude Code ended with {record.get('subtype')!r}"


class CodexParser:
    """Codex's ``exec --json`` lines."""

    def __init__(self) -> None:
        self.outcome = CliOutcome()

    def feed(self, record: dict[str, Any]) -> list[CliEvent]:
        kind = record.get("type")
        out = self.outcome
        if kind == "thread.started":
            out.session_id = _str(record, "thread_id")
        elif kind == "item.completed":
            return self._item(record.get("item"))
        elif kind == "turn.completed":
            out.finished = True
            usage = record.get("usage")
            cached = _int(usage, "cached_input_tokens")
            fresh = max(_int(usage, "input_tokens") - cached, 0)
            out.usage = out.usage + Usage(fresh, _int(usage, "output_tokens"), cached)
        elif kind == "turn.failed":
            out.error = _str(record.get("error"), "message") or "Codex reported a failed turn"
        elif kind == "error":
            log.debug("codex: %s", _str(record, "message"))
        return []

    def _item(self, item: Any) -> list[CliEvent]:
        kind = _str(item, "type")
        if kind in ("agent_message", "assistant_message"):
            text = _str(item, "text") or ""
            self.outcome.text = text
            return [CliText(text)] if text else []
        if kind == "command_execution":
            return [CliProgress(f"command {_str(item, 'command') or '?'}")]
        if kind in ("file_change", "mcp_tool_call", "web_search"):
            return [CliProgress(kind.replace("_", " "))]
        if kind == "error":
            log.debug("codex: %s", _str(item, "message"))
        return []


class OpenCodeParser:
    """OpenCode's ``run --format json`` events."""

    def __init__(self) -> None:
        self.outcome = CliOutcome()
        self._step: list[str] = []

    def feed(self, record: dict[str, Any]) -> list[CliEvent]:
        kind = record.get("type")
        part = record.get("part")
        out = self.outcome
        out.session_id = _str(record, "sessionID") or out.session_id
        if kind == "step_start":
            self._step = []
        elif kind == "text" and (text := _str(part, "text")):
            self._step.append(text)
            out.text = "".join(self._step)
            return [CliText(text)]
        elif kind == "tool_use":
            return [CliProgress(f"tool {_str(part, 'tool') or '?'}")]
        elif kind == "step_finish":
            self._finish(part)
        elif kind == "error":
            out.error = _error_text(record.get("error"))
        return []

    def _finish(self, part: Any) -> None:
        out = self.outcome
        out.finished = True
        tokens = part.get("tokens") if isinstance(part, dict) else None
        cache = tokens.get("cache") if isinstance(tokens, dict) else None
        out.usage = out.usage + Usage(
            _int(tokens, "input"),
            _int(tokens, "output") + _int(tokens, "reasoning"),
            _int(cache, "read"),
            _int(cache, "write"),
        )
        cost = part.get("cost") if isinstance(part, dict) else None
        if isinstance(cost, int | float):
            out.cost_usd = (out.cost_usd or 0.0) + float(cost)


def _error_text(error: Any) -> str:
    """OpenCode's error object (``{"name": ..., "data": {"message": ...}}``) as one line."""
    message = _str(error.get("data"), "message") if isinstance(error, dict) else None
    name = _str(error, "name")
    return message or name or "OpenCode reported an error"
