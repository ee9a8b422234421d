"""The parsers of the CLIs' JSON-lines streams, on lines in each CLI's recorded format."""

from __future__ import annotations

import json
from typing import Any

from openheim.cliagents.parse import (
    ClaudeParser,
    CliEvent,
    CliProgress,
    CliText,
    CodexParser,
    OpenCodeParser,
    StreamParser,
    parse_line,
)
from openheim.messages import Usage


def _feed(parser: StreamParser, *records: dict[str, Any] | str) -> list[CliEvent]:
    events: list[CliEvent] = []
    for record in records:
        line = record if isinstance(record, str) else json.dumps(record)
        events += parse_line(line.encode(), parser)
    return events


def _delta(text: str) -> dict[str, Any]:
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return {"type": "stream_event", "event": delta, "session_id": "s1"}


CLAUDE_RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "Hello there",
    "session_id": "s1",
    "total_cost_usd": 0.0012,
    "usage": {
        "input_tokens": 11,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 2,
        "output_tokens": 7,
    },
}


def test_claude_streams_deltas_once_and_reads_the_result() -> None:
    parser = ClaudeParser()
    start = {"type": "stream_event", "event": {"type": "message_start", "message": {}}}
    assistant = {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "Hello there"},
                {"type": "tool_use", "name": "Read", "input": {}},
            ]
        },
    }
    events = _feed(
        parser,
        {"type": "system", "subtype": "init", "session_id": "s1"},
        start,
        _delta("Hello "),
        _delta("there"),
        assistant,
        CLAUDE_RESULT,
    )
    assert events == [CliText("Hello "), CliText("there"), CliProgress("tool Read")]
    out = parser.outcome
    assert (out.text, out.session_id, out.error, out.finished) == ("Hello there", "s1", None, True)
    assert out.usage == Usage(11, 7, 2, 3)
    assert out.cost_usd == 0.0012


def test_claude_without_partial_messages_uses_the_whole_message() -> None:
    parser = ClaudeParser()
    message = {"type": "assistant", "message": {"content": [{"type": "text", "text": "All"}]}}
    assert _feed(parser, message) == [CliText("All")]


def test_claude_error_result_is_an_error() -> None:
    parser = ClaudeParser()
    _feed(parser, {**CLAUDE_RESULT, "is_error": True, "result": "Invalid API key"})
    assert parser.outcome.error == "Invalid API key"
    parser = ClaudeParser()
    _feed(parser, {"type": "result", "subtype": "error_max_turns", "is_error": False})
    assert parser.outcome.error is not None and "error_max_turns" in parser.outcome.error


def test_non_json_lines_never_become_text() -> None:
    for parser in (ClaudeParser(), CodexParser(), OpenCodeParser()):
        events = _feed(parser, "Warning: something odd", "[1, 2]", "", '"a string"', "{broken")
        assert events == []
        assert parser.outcome.text == ""


def test_codex_items_usage_and_thread() -> None:
    parser = CodexParser()
    events = _feed(
        parser,
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "item.completed", "item": {"id": "i0", "type": "error", "message": "meta"}},
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Done."}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 5},
        },
    )
    assert events == [CliProgress("command ls"), CliText("Done.")]
    out = parser.outcome
    assert (out.text, out.session_id, out.error, out.finished) == ("Done.", "t-1", None, True)
    assert out.usage == Usage(6, 5, 4, 0)


def test_codex_failed_turn_is_an_error() -> None:
    parser = CodexParser()
    _feed(parser, {"type": "turn.failed", "error": {"message": "unexpected status 401"}})
    assert parser.outcome.error == "unexpected status 401"
    assert not parser.outcome.finished


def _oc(kind: str, part: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "timestamp": 1, "sessionID": "ses_1", "part": part}


def test_opencode_text_tools_and_tokens() -> None:
    parser = OpenCodeParser()
    tokens = {"input": 10, "output": 5, "reasoning": 2, "cache": {"read": 1, "write": 3}}
    events = _feed(
        parser,
        _oc("step_start", {"type": "step-start"}),
        _oc("text", {"type": "text", "text": "Looking."}),
        _oc("tool_use", {"type": "tool", "tool": "read"}),
        _oc("step_finish", {"type": "step-finish", "tokens": tokens, "cost": 0.5}),
        _oc("step_start", {"type": "step-start"}),
        _oc("text", {"type": "text", "text": "Final."}),
        _oc("step_finish", {"type": "step-finish", "tokens": tokens, "cost": 0.25}),
    )
    assert events == [CliText("Looking."), CliProgress("tool read"), CliText("Final.")]
    out = parser.outcome
    assert (out.text, out.session_id, out.finished) == ("Final.", "ses_1", True)
    assert out.usage == Usage(20, 14, 2, 6)
    assert out.cost_usd == 0.75


def test_opencode_error_event() -> None:
    parser = OpenCodeParser()
    error = {"name": "ProviderAuthError", "data": {"message": "bad key"}}
    _feed(parser, {"type": "error", "sessionID": "ses_1", "error": error})
    assert parser.outcome.error == "bad key"
