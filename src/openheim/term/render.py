"""Render run events: the answer to stdout as it streams; the session line, notices and tool
activity (with ``--tool-output``, the results' text too) to stderr (``TextRenderer``), or every
event as a JSON line (``JsonRenderer``).

Everything written is redacted (``openheim.redaction.secrets``). Text and thinking deltas pass
through
a ``StreamRedactor`` each, so a secret the model streams across several deltas is recognised
too: the renderer holds back a tail that may be part of one and shows it, redacted, before
the next event of another kind.
"""

from __future__ import annotations

import json
from typing import TextIO

from openheim.events import (
    ContextCompacted,
    ContextTrimmed,
    Event,
    Finished,
    Notice,
    RetryNotice,
    SessionStarted,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    compaction_line,
    event_to_dict,
    notice_line,
)
from openheim.redaction.secrets import redact, redact_data
from openheim.redaction.stream import StreamRedactor

_MAX_ARGS_SHOWN = 120


class TextRenderer:
    """Human output: answer text on ``out``, one line per tool call and result on ``err``."""

    def __init__(self, out: TextIO, err: TextIO, *, tool_output: bool = False) -> None:
        self.out = out
        self.err = err
        self.tool_output = tool_output
        """Also write each tool result's text on ``err`` (``run --tool-output``)."""
        self._ends_with_newline = True
        self._text = StreamRedactor()

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._write(self._text.feed(event.text))
            return
        if not isinstance(event, ThinkingDelta):
            self._write(self._text.flush())
        if isinstance(event, ToolCall):
            args = redact(json.dumps(dict(event.arguments), ensure_ascii=False))
            if len(args) > _MAX_ARGS_SHOWN:
                args = args[: _MAX_ARGS_SHOWN - 1] + "…"
            self._line(f"→ {event.name} {args}")
        elif isinstance(event, ToolResult):
            content = redact(event.content).strip()  # before cutting: a cut secret hides
            first = content.splitlines()[0] if content else ""
            mark = "✓" if not event.is_error else "✗"
            said = first.startswith(f"{event.status}:")  # a denial's text starts "denied:"
            detail = first[:200] if said else f"{event.status}: {first[:200]}"
            self._line(f"  {mark} {event.name}: {detail if event.is_error else _size(content)}")
            if self.tool_output and content:
                self._line("\n".join(f"    {line}" for line in content.splitlines()))
        elif isinstance(event, RetryNotice):
            of = f" of {event.max_retries}" if event.max_retries else ""
            self._line(
                f"retrying in {event.delay:.1f} s (attempt {event.attempt}{of}): {event.error}"
            )
        elif isinstance(event, Notice):
            self._line(notice_line(event))
        elif isinstance(event, SessionStarted):
            if event.session_id is not None:
                self._line(f"openheim: session {event.session_id}")
        elif isinstance(event, ContextTrimmed):
            self._line(f"note: left {event.dropped} older messages out to fit the context window")
        elif isinstance(event, ContextCompacted):
            self._line(f"note: {compaction_line(event)}")
        elif isinstance(event, Finished):
            if not self._ends_with_newline:
                self.out.write("\n")
                self.out.flush()
            if event.stop_reason != "end_turn":
                detail = f" ({event.reason})" if event.reason else ""
                self._line(f"stopped: {event.stop_reason}{detail}")

    def _write(self, text: str) -> None:
        """Answer text, already redacted, to ``out``."""
        if text:
            self.out.write(text)
            self.out.flush()
            self._ends_with_newline = text.endswith("\n")

    def _line(self, text: str) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
            self.out.flush()
            self._ends_with_newline = True
        self.err.write(redact(text) + "\n")
        self.err.flush()


def _size(content: str) -> str:
    """A successful result in a few words: how much came back."""
    if not content:
        return "completed, no output"
    lines = content.count("\n") + 1
    return f"completed, {lines} line{'s' if lines != 1 else ''}, {len(content.encode())} bytes"


class JsonRenderer:
    """``--json``: one JSON object per event per line on ``out``.

    A text or thinking delta is printed with the text its ``StreamRedactor`` lets out (and
    not at all while it holds everything back); what is held comes out as one more delta of
    its kind before any other event."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._streams = {"text_delta": StreamRedactor(), "thinking_delta": StreamRedactor()}

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            self._flush(but=event.type)
            self._delta(event.type, self._streams[event.type].feed(event.text))
            return
        self._flush()
        self._print(redact_data(event_to_dict(event)))

    def _flush(self, but: str = "") -> None:
        for kind, stream in self._streams.items():
            if kind != but:
                self._delta(kind, stream.flush())

    def _delta(self, kind: str, text: str) -> None:
        if text:
            self._print({"type": kind, "text": text})

    def _print(self, line: dict[str, object]) -> None:
        self.out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.out.flush()
