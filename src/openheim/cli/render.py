"""Render run events: the answer to stdout as it streams, tool activity to stderr.

Everything written is redacted (``openheim.secrets``). Text deltas are redacted one by
one, so a secret the model streams across two deltas is not recognised in the stream.
"""

from __future__ import annotations

import json
from typing import TextIO

from openheim.events import (
    ContextTrimmed,
    Event,
    Finished,
    Notice,
    RetryNotice,
    TextDelta,
    ToolCall,
    ToolResult,
    event_to_dict,
)
from openheim.secrets import redact, redact_data

_MAX_ARGS_SHOWN = 120


class TextRenderer:
    """Human output: answer text on ``out``, one line per tool call and result on ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._ends_with_newline = True

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.out.write(redact(event.text))
            self.out.flush()
            if event.text:
                self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, ToolCall):
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
            self._line(f"  {mark} {event.name}: {detail if event.is_error else event.status}")
        elif isinstance(event, RetryNotice):
            of = f" of {event.max_retries}" if event.max_retries else ""
            self._line(
                f"retrying in {event.delay:.1f} s (attempt {event.attempt}{of}): {event.error}"
            )
        elif isinstance(event, Notice):
            self._line(f"note: {event.message}")
        elif isinstance(event, ContextTrimmed):
            self._line(f"note: left {event.dropped} older messages out to fit the context window")
        elif isinstance(event, Finished):
            if not self._ends_with_newline:
                self.out.write("\n")
                self.out.flush()
            if event.stop_reason != "end_turn":
                detail = f" ({event.reason})" if event.reason else ""
                self._line(f"stopped: {event.stop_reason}{detail}")

    def _line(self, text: str) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
            self.out.flush()
            self._ends_with_newline = True
        self.err.write(redact(text) + "\n")
        self.err.flush()


class JsonRenderer:
    """``--json``: one JSON object per event per line on ``out``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        line = redact_data(event_to_dict(event))
        self.out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.out.flush()
