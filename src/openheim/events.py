"""The one event vocabulary of an agent run.

The loop is an async generator of these events. Every surface (``run --json`` lines, the ACP
``session/update`` stream, WebSocket frames, the TUI) is a translation of them; ``to_dict`` gives
the JSON shape that ``run --json`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from openheim.messages import StopReason, Usage

ToolStatus: TypeAlias = Literal["completed", "failed", "denied", "cancelled"]


@dataclass(frozen=True, slots=True)
class IterationStart:
    """A model call is about to start (1-based)."""

    iteration: int
    type: Literal["iteration_start"] = "iteration_start"


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asked for a tool call; emitted for every call of a reply before any runs."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    tool_kind: str = "other"
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class FileDiff:
    """A file a tool changed: its absolute path, the text before (None: a new file) and after."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    id: str
    name: str
    content: str
    is_error: bool
    status: ToolStatus
    diff: FileDiff | None = None
    """For a file edit: what changed, so a surface can show a diff (ACP ``diff`` content)."""
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    """Tokens used by one model call (``usage``) and by the run so far (``total``)."""

    usage: Usage
    total: Usage
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class CostUpdate:
    """Spend at the end of a turn: this turn's cost and the session's, in US dollars.

    A cost is None when no model of the turn (or session) has a known price."""

    turn_cost: float | None
    session_cost: float | None
    session_usage: Usage
    type: Literal["cost"] = "cost"


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """A provider call failed and will be retried after ``delay`` seconds."""

    attempt: int
    delay: float
    error: str
    max_retries: int = 0
    type: Literal["retry"] = "retry"


@dataclass(frozen=True, slots=True)
class ContextTrimmed:
    """The oldest ``dropped`` of ``total`` messages were left out of this request to fit the
    context window (the stored history is unchanged)."""

    dropped: int
    total: int
    type: Literal["context_trimmed"] = "context_trimmed"


@dataclass(frozen=True, slots=True)
class ContextCompacted:
    """The session's older messages were replaced in what the model sees: by a summary the
    model wrote (``method`` ``summary``), or left out when no summary could be had (``trim``,
    ``reason`` says why). ``messages`` is how many leading messages are now replaced; the
    stored history is unchanged. Token counts are estimates of the whole request."""

    before_tokens: int
    after_tokens: int
    messages: int
    method: Literal["summary", "trim"]
    reason: str | None = None
    type: Literal["context_compacted"] = "context_compacted"


NoticeKind: TypeAlias = Literal[
    "trust", "permissions", "mcp", "agents", "skills", "prompt", "sandbox", "provider", "loop"
]
"""What a notice is about:

- ``trust``: a key of an untrusted project's config was ignored (found when settings load);
- ``permissions``: a rule of the permissions files was ignored;
- ``mcp``: an MCP server is unavailable (its tools are missing);
- ``agents``: an agent profile was skipped or is not trusted;
- ``skills``: a skill file or folder was skipped;
- ``prompt``: a file of the system prompt is missing or unreadable;
- ``sandbox``: shell commands cannot be confined as configured;
- ``provider``: which model answers (the embedded local one), a fallback, a reply repaired or a
  provider process restarted;
- ``loop``: the agent loop's own (a limit hit, guidance added).
"""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not model output (guidance added, a limit hit, an
    MCP server unavailable, a config key ignored)."""

    message: str
    level: Literal["info", "warning"] = "info"
    kind: NoticeKind = "loop"
    type: Literal["notice"] = "notice"


@dataclass(frozen=True, slots=True)
class SessionStarted:
    """The first event of a session's first prompt: which session runs, on what.

    The session's notices (``Notice``) follow it, then the prompt's own events."""

    session_id: str | None
    """The stored session's id; None when the session is not saved."""
    provider: str
    model: str
    cwd: str
    messages: int
    """How many messages the session held when it was opened."""
    resumed: bool
    type: Literal["session_started"] = "session_started"


@dataclass(frozen=True, slots=True)
class Failed:
    """A prompt or command failed with an error instead of finishing (``openheim run --json``
    prints it in place of ``finished``, also for an error before any session exists)."""

    message: str
    hint: str | None = None
    error: str = "OpenheimError"
    """The error's class in ``openheim.errors`` (``ConfigError``, ``ProviderUnavailable``...)."""
    exit_code: int | None = None
    """The exit code the command ends with, when a command failed."""
    type: Literal["failed"] = "failed"


@dataclass(frozen=True, slots=True)
class Finished:
    """The run ended. ``reason`` refines ``stop_reason`` (e.g. ``loop_detected``)."""

    stop_reason: StopReason
    reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    text: str = ""
    """The final assistant text of the run."""
    denied: int = 0
    """How many tool calls the approval gate refused during the run."""
    type: Literal["finished"] = "finished"


Event: TypeAlias = (
    IterationStart
    | TextDelta
    | ThinkingDelta
    | ToolCall
    | ToolResult
    | UsageUpdate
    | CostUpdate
    | RetryNotice
    | ContextTrimmed
    | ContextCompacted
    | Notice
    | SessionStarted
    | Finished
    | Failed
)


EVENT_TYPES: frozenset[str] = frozenset(
    kind.__dataclass_fields__["type"].default for kind in get_args(Event)
)
"""Every event's ``type``: what ``openheim run --json`` may print."""


def notice_line(notice: Notice) -> str:
    """A notice as one line for a person: ``note: ...`` for the loop's own, else
    ``openheim: ...`` (as ``openheim run`` writes it to stderr). Only printable characters
    pass as they are; any other (a line break, an escape sequence in a file name a project
    chose) is shown as its escape, so a terminal never acts on it."""
    return f"{'note' if notice.kind == 'loop' else 'openheim'}: {_printable(notice.message)}"


def _printable(text: str) -> str:
    """``text`` with each character that is not printable written as its Python escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def compaction_line(event: ContextCompacted) -> str:
    """A compaction as one line for a person, saying why when it fell back to a trim."""
    tokens = f"about {event.before_tokens} -> {event.after_tokens} tokens"
    if event.method == "summary":
        return f"compacted {event.messages} older messages into a summary ({tokens})"
    why = f": {event.reason}" if event.reason else ""
    return f"left {event.messages} older messages out instead of summarising ({tokens}){why}"


def event_to_dict(event: Event) -> dict[str, Any]:
    """JSON-ready form of an event: its fields, with ``type`` first."""
    out: dict[str, Any] = {"type": event.type}
    for name in event.__dataclass_fields__:
        value = getattr(event, name)
        if isinstance(value, Usage):
            value = value.to_dict()
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, FileDiff):
            value = {"path": value.path, "old_text": value.old_text, "new_text": value.new_text}
        out[name] = value
    return out
