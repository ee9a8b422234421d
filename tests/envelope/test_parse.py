"""Reading replies: final answers, valid envelopes, and every way an envelope can be wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openheim.envelope.parse import (
    DELEGATE_TOOL,
    ENVELOPE_ERROR,
    HOW_TO,
    INVALID_ACTION,
    SKILL_TOOL,
    ParsedReply,
    parse_reply,
)
from openheim.messages import TextBlock, ToolUseBlock

TOOLS = ["read_file", "write_file"]


def block(body: Any, tag: str = "openheim-agent") -> str:
    text = body if isinstance(body, str) else json.dumps(body)
    return f"```{tag}\n{text}\n```"


def envelope_error(reply: ParsedReply) -> str:
    (call,) = reply.calls
    assert call.name == ENVELOPE_ERROR
    assert call.error is not None
    assert HOW_TO in call.error
    return call.error


def test_no_block_is_a_final_answer() -> None:
    reply = parse_reply("The answer is 42.", TOOLS)
    assert reply.content == (TextBlock("The answer is 42."),)
    assert reply.calls == ()


def test_one_block_gives_text_note_and_calls() -> None:
    body = {
        "assistant_text": "Reading it now.",
        "actions": [
            {"type": "tool", "id": "t1", "name": "read_file", "arguments": {"path": "a.txt"}},
            {"type": "tool", "id": "t2", "name": "write_file", "arguments": {"path": "b"}},
        ],
    }
    reply = parse_reply(f"Let me check.\n{block(body)}\n", TOOLS)
    assert parse_reply(f"Let me check.{block(body)}", TOOLS).assistant_text == "\n\nReading it now."
    assert reply.text == ("Let me check.\n", "\n")
    assert reply.assistant_text == "Reading it now."
    assert reply.content == (
        TextBlock("Let me check.\n\nReading it now."),
        ToolUseBlock("t1", "read_file", {"path": "a.txt"}),
        ToolUseBlock("t2", "write_file", {"path": "b"}),
    )
    assert reply.warnings == ()


def test_yips_tags_are_accepted() -> None:
    action = {"type": "tool", "id": "x", "name": "read_file", "arguments": {"path": "a"}}
    reply = parse_reply(block({"actions": [action]}, "yips-agent"), TOOLS)
    assert reply.calls == (ToolUseBlock("x", "read_file", {"path": "a"}),)
    legacy = {"tool_calls": [{"id": "y", "name": "read_file", "arguments": {}}]}
    reply = parse_reply(block(legacy, "yips-tools"), TOOLS)
    assert reply.calls == (ToolUseBlock("y", "read_file", {}),)


def test_two_blocks_are_one_error() -> None:
    one = block({"actions": [{"type": "tool", "id": "t1", "name": "read_file"}]})
    reply = parse_reply(f"a {one} b {one}", TOOLS)
    error = envelope_error(reply)
    assert "2 action blocks" in error
    assert "only one" in error
    assert reply.calls[0].raw_arguments == f"{one}\n{one}"
    assert reply.text == ("a ", " b ")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", "block is empty"),
        ("   \n ", "block is empty"),
        ('{"actions": [}', "not valid JSON (Expecting value at line 1, column 14)"),
        ("[1, 2]", "holds a JSON array, not an object"),
        ('"read_file"', "holds a JSON string, not an object"),
        ('{"tool": "read_file"}', 'no "actions" array'),
        ('{"actions": {"name": "read_file"}}', '"actions" must be an array of action objects'),
    ],
)
def test_unreadable_envelopes_are_one_error(body: str, expected: str) -> None:
    reply = parse_reply(f"before {block(body)}", TOOLS)
    assert expected in envelope_error(reply)
    assert reply.text == ("before ",)
    assert reply.assistant_text == ""


def test_a_cut_off_block_says_so() -> None:
    error = envelope_error(parse_reply('```openheim-agent\n{"actions": [', TOOLS, truncated=True))
    assert "no closing ``` line" in error
    assert "output token limit" in error


def test_an_unclosed_but_complete_block_is_accepted() -> None:
    reply = parse_reply('```openheim-agent\n{"actions": [{"name": "read_file"}]}```', TOOLS)
    assert reply.calls == (ToolUseBlock("t1", "read_file", {}),)


def test_duplicate_ids_drop_later_actions_with_a_warning() -> None:
    actions = [
        {"id": "t1", "name": "read_file", "arguments": {"path": "a"}},
        {"id": "t1", "name": "read_file", "arguments": {"path": "b"}},
        {"id": "t2", "name": "write_file", "arguments": {}},
    ]
    reply = parse_reply(block({"actions": actions}), TOOLS)
    assert [c.id for c in reply.calls] == ["t1", "t2"]
    assert reply.calls[0].arguments == {"path": "a"}
    assert len(reply.warnings) == 1
    assert "'t1'" in reply.warnings[0]


def test_missing_ids_are_synthesised_around_given_ones() -> None:
    actions = [
        {"name": "read_file"},
        {"id": "t1", "name": "read_file"},
        {"id": 7, "name": "write_file"},
    ]
    reply = parse_reply(block({"actions": actions}), TOOLS)
    assert [c.id for c in reply.calls] == ["t2", "t1", "7"]
    assert reply.warnings == ()


def test_unknown_tools_and_malformed_actions_carry_errors() -> None:
    actions = [
        {"id": "a", "name": "delete_everything", "arguments": {}},
        {"id": "b", "arguments": {}},
        {"id": "c", "name": "read_file", "arguments": "README.md"},
        {"id": "d", "type": "magic", "name": "read_file"},
        "read_file",
    ]
    calls = parse_reply(block({"actions": actions}), TOOLS).calls
    assert [(c.id, c.name) for c in calls] == [
        ("a", "delete_everything"),
        ("b", INVALID_ACTION),
        ("c", "read_file"),
        ("d", INVALID_ACTION),
        ("t1", INVALID_ACTION),
    ]
    errors = [c.error or "" for c in calls]
    assert "unknown tool 'delete_everything'" in errors[0]
    assert "read_file, write_file" in errors[0]
    assert 'no "name"' in errors[1]
    assert "are a JSON string" in errors[2]
    assert calls[2].raw_arguments == '"README.md"'
    assert "type 'magic'" in errors[3]
    assert "is a JSON string" in errors[4]
    assert calls[4].raw_arguments == '"read_file"'


@pytest.mark.parametrize("available", [True, False])
def test_skill_actions_call_load_skill(available: bool) -> None:
    tools = [*TOOLS, SKILL_TOOL] if available else TOOLS
    body = {"actions": [{"type": "skill", "id": "s1", "name": "pdf"}]}
    (call,) = parse_reply(block(body), tools).calls
    assert (call.id, call.name, dict(call.arguments)) == ("s1", SKILL_TOOL, {"name": "pdf"})
    if available:
        assert call.error is None
    else:
        assert call.error is not None
        assert "skills are not available" in call.error


@pytest.mark.parametrize("available", [True, False])
def test_subagent_actions_call_delegate_task(available: bool) -> None:
    tools = [*TOOLS, DELEGATE_TOOL] if available else TOOLS
    body = {"actions": [{"type": "subagent", "id": "d1", "name": "reviewer", "task": "review"}]}
    (call,) = parse_reply(block(body), tools).calls
    assert (call.name, dict(call.arguments)) == (
        DELEGATE_TOOL,
        {"agent": "reviewer", "task": "review"},
    )
    assert (call.error is None) == available
    if not available:
        assert "subagents are not available" in (call.error or "")


def test_a_subagent_action_without_task_is_malformed() -> None:
    body = {"actions": [{"type": "subagent", "id": "d1", "name": "reviewer"}]}
    (call,) = parse_reply(block(body), [DELEGATE_TOOL]).calls
    assert call.name == INVALID_ACTION
    assert '"task"' in (call.error or "")


def test_note_only_envelope_is_text() -> None:
    reply = parse_reply(block({"assistant_text": "All done.", "actions": []}), TOOLS)
    assert reply.calls == ()
    assert reply.content == (TextBlock("All done."),)


def test_raw_newlines_and_fences_inside_argument_strings() -> None:
    content = "# Title\n```sh\nls\n```\n"
    body = '{"actions": [{"id": "t1", "name": "write_file", "arguments": {"content": "'
    text = f"```openheim-agent\n{body}{content}" + '"}}]}\n```\nDone.'
    reply = parse_reply(text, TOOLS)
    assert reply.calls == (ToolUseBlock("t1", "write_file", {"content": content}),)
    assert reply.text == ("\nDone.",)
