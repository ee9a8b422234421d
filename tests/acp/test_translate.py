"""openheim → ACP translation: titles, locations, tool call updates, usage, streaming, replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from openheim.acp.translate import (
    acp_kind,
    event_update,
    replay_updates,
    tool_call_done,
    tool_call_start,
    tool_locations,
    usage_update,
)
from openheim.events import (
    FileDiff,
    Finished,
    Notice,
    SessionStarted,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
)
from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.runtime.titles import tool_title
from openheim.tools.base import ToolKind

CWD = Path("/home/u/proj")


def wire(model: BaseModel | None) -> dict[str, Any]:
    """The JSON shape a client receives."""
    assert model is not None
    return model.model_dump(by_alias=True, exclude_none=True)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@pytest.mark.parametrize(
    ("name", "arguments", "title"),
    [
        ("read_file", {"path": "notes.txt"}, "Read notes.txt"),
        ("read_file", {"path": "/home/u/proj/src/a.py", "offset": 3}, "Read src/a.py"),
        ("read_file", {"path": "/etc/hosts"}, "Read /etc/hosts"),
        ("read_file", {"path": "../other/x.md"}, "Read /home/u/other/x.md"),
        ("read_file", {}, "read_file"),
        ("read_file", {"path": 7}, "read_file"),
        ("write_file", {"path": "a.txt", "content": "hi"}, "Write a.txt"),
        (
            "edit_file",
            {"path": "./src/x.py", "old_string": "a", "new_string": "b"},
            "Edit src/x.py",
        ),
        ("list_dir", {"path": "src"}, "List src/"),
        ("list_dir", {"path": "src/"}, "List src/"),
        ("list_dir", {}, "List ./"),
        ("search", {"pattern": "TODO"}, "Search 'TODO'"),
        ("search", {"pattern": "TODO", "path": "src"}, "Search 'TODO' in src/"),
        ("search", {"path": "src"}, "search"),
        ("glob", {"pattern": "**/*.py"}, "Find '**/*.py'"),
        ("execute_command", {"command": "ls -la"}, "Run `ls -la`"),
        ("execute_command", {"command": "  make test\n"}, "Run `make test`"),
        ("execute_command", {"command": "cd src\nmake"}, "Run `cd src…`"),
        ("execute_command", {"command": "   "}, "execute_command"),
        ("web_fetch", {"url": "https://example.com/a"}, "Fetch https://example.com/a"),
        ("delegate_task", {"agent": "reviewer", "task": "review"}, "Delegate to reviewer"),
        ("delegate_task", {"system_prompt": "You review.", "task": "x"}, "delegate_task"),
        ("github__create_issue", {"title": "bug"}, "github: create_issue"),
        ("__private", {}, "__private"),
        ("my_tool", {"path": "a.txt"}, "my_tool"),
    ],
)
def test_tool_title(name: str, arguments: dict[str, Any], title: str) -> None:
    assert tool_title(name, arguments, CWD) == title


def test_tool_title_cuts_a_long_command() -> None:
    command = "echo " + "x" * 200
    assert tool_title("execute_command", {"command": command}, CWD) == f"Run `{command[:80]}…`"


@pytest.mark.parametrize(
    ("arguments", "locations"),
    [
        ({"path": "notes.txt"}, [{"path": "/home/u/proj/notes.txt"}]),
        ({"path": "src/../a.py", "offset": 40}, [{"path": "/home/u/proj/a.py", "line": 40}]),
        ({"path": "/etc/hosts", "offset": 0}, [{"path": "/etc/hosts"}]),
        ({"path": "a.py", "offset": True}, [{"path": "/home/u/proj/a.py"}]),
        ({"path": "a.py", "offset": "5"}, [{"path": "/home/u/proj/a.py"}]),
        ({"path": ""}, []),
        ({"command": "ls"}, []),
    ],
)
def test_tool_locations(arguments: dict[str, Any], locations: list[dict[str, Any]]) -> None:
    assert [wire(loc) for loc in tool_locations(arguments, CWD)] == locations


def test_tool_call_start() -> None:
    event = ToolCall("c1", "read_file", {"path": "notes.txt", "offset": 3}, ToolKind.READ)
    assert wire(tool_call_start(event, CWD)) == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "Read notes.txt",
        "kind": "read",
        "status": "pending",
        "locations": [{"path": "/home/u/proj/notes.txt", "line": 3}],
        "rawInput": {"path": "notes.txt", "offset": 3},
    }


def test_tool_call_start_unknown_kind_is_other() -> None:
    update = tool_call_start(ToolCall("c2", "mcp__thing", {}, "teleport"), CWD)
    assert (update.kind, update.title, update.locations) == ("other", "mcp: thing", [])
    assert (acp_kind("edit"), acp_kind(ToolKind.FETCH), acp_kind("")) == ("edit", "fetch", "other")


def test_tool_call_done_completed_edit_has_diff_and_text() -> None:
    diff = FileDiff("/home/u/proj/x.py", "a\n", "b\n")
    event = ToolResult("c1", "edit_file", "replaced 1", False, "completed", diff)
    assert wire(tool_call_done(event)) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [
            {"type": "diff", "path": "/home/u/proj/x.py", "oldText": "a\n", "newText": "b\n"},
            {"type": "content", "content": text("replaced 1")},
        ],
        "rawOutput": {"content": "replaced 1", "status": "completed", "isError": False},
    }


def test_tool_call_done_new_file_diff_has_no_old_text() -> None:
    diff = FileDiff("/p/new.txt", None, "hello\n")
    content = wire(tool_call_done(ToolResult("c1", "write_file", "", False, "completed", diff)))
    assert content["content"] == [{"type": "diff", "path": "/p/new.txt", "newText": "hello\n"}]


@pytest.mark.parametrize("status", ["failed", "denied", "cancelled"])
def test_tool_call_done_not_completed_is_failed_without_diff(status: Any) -> None:
    diff = FileDiff("/home/u/proj/x.py", "a", "b")
    event = ToolResult("c9", "edit_file", "refused", True, status, diff)
    assert wire(tool_call_done(event)) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c9",
        "status": "failed",
        "content": [{"type": "content", "content": text("refused")}],
        "rawOutput": {"content": "refused", "status": status, "isError": True},
    }


def test_usage_update_with_cost() -> None:
    assert wire(usage_update(1200, 200_000, 0.0123)) == {
        "sessionUpdate": "usage_update",
        "used": 1200,
        "size": 200_000,
        "cost": {"amount": 0.0123, "currency": "USD"},
    }


def test_usage_update_clamps_and_leaves_unknown_cost_out() -> None:
    update = usage_update(-5, -1, None)
    assert wire(update) == {"sessionUpdate": "usage_update", "used": 0, "size": 0}


def test_event_update_streams_text_and_thinking() -> None:
    message, thought = event_update(TextDelta("Hel")), event_update(ThinkingDelta("hmm"))
    assert wire(message) == {"sessionUpdate": "agent_message_chunk", "content": text("Hel")}
    assert wire(thought) == {"sessionUpdate": "agent_thought_chunk", "content": text("hmm")}


@pytest.mark.parametrize(
    "event",
    [
        SessionStarted("s1", "openai", "gpt", "/w", 0, False),
        ToolCall("c1", "read_file", {"path": "a"}),
        ToolResult("c1", "read_file", "x", False, "completed"),
        Finished("end_turn"),
        Notice("added guidance", "warning"),  # the turn sends notices as messages of their own
    ],
)
def test_event_update_ignores_other_events(event: Any) -> None:
    assert event_update(event) is None


def conversation() -> list[Message]:
    return [
        Message("user", (TextBlock("look at this"), ImageBlock("aGk=", "image/png"))),
        Message(
            "assistant",
            (
                ThinkingBlock("let me read", signature="sig"),
                ThinkingBlock("[redacted]", signature="encrypted", redacted=True),
                TextBlock("Reading."),
                ToolUseBlock("t1", "read_file", {"path": "notes.txt"}),
                ToolUseBlock("t2", "execute_command", {"command": "false"}),
                ToolUseBlock("t3", "web_fetch", {"url": "https://example.com"}),
            ),
        ),
        Message(
            "user",
            (
                ToolResultBlock("t1", "hello"),
                ToolResultBlock("t2", "exit code 1", is_error=True),
                TextBlock("[guidance] stop running failing commands"),
            ),
        ),
        Message("assistant", (TextBlock("Done."),)),
        Message.user("thanks"),
    ]


def test_replay_updates() -> None:
    updates = replay_updates(conversation(), CWD, {"read_file": "read", "web_fetch": "fetch"})
    assert [wire(u) for u in updates] == [
        {"sessionUpdate": "user_message_chunk", "content": text("look at this")},
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        },
        {"sessionUpdate": "agent_thought_chunk", "content": text("let me read")},
        {"sessionUpdate": "agent_message_chunk", "content": text("Reading.")},
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Read notes.txt",
            "kind": "read",
            "status": "completed",
            "content": [{"type": "content", "content": text("hello")}],
            "locations": [{"path": "/home/u/proj/notes.txt"}],
            "rawInput": {"path": "notes.txt"},
            "rawOutput": {"content": "hello", "status": "completed", "isError": False},
        },
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t2",
            "title": "Run `false`",
            "kind": "other",
            "status": "failed",
            "content": [{"type": "content", "content": text("exit code 1")}],
            "locations": [],
            "rawInput": {"command": "false"},
            "rawOutput": {"content": "exit code 1", "status": "failed", "isError": True},
        },
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t3",
            "title": "Fetch https://example.com",
            "kind": "fetch",
            "status": "failed",
            "content": [{"type": "content", "content": text("no result was stored")}],
            "locations": [],
            "rawInput": {"url": "https://example.com"},
            "rawOutput": {"content": "no result was stored", "status": "failed", "isError": True},
        },
        {"sessionUpdate": "agent_message_chunk", "content": text("Done.")},
        {"sessionUpdate": "user_message_chunk", "content": text("thanks")},
    ]


def test_replay_matches_repeated_ids_to_the_nearest_later_result() -> None:
    messages = [
        Message("assistant", (ToolUseBlock("dup", "x", {}),)),
        Message("assistant", (ToolUseBlock("dup", "x", {}),)),
        Message("user", (ToolResultBlock("dup", "second"),)),
        Message("assistant", (ToolUseBlock("dup", "x", {}),)),
        Message("user", (ToolResultBlock("dup", "third"),)),
    ]
    calls = replay_updates(messages, CWD)
    assert [wire(c)["rawOutput"]["content"] for c in calls] == [
        "no result was stored",
        "second",
        "third",
    ]


def test_replay_tool_result_images_and_unknown_kinds() -> None:
    messages = [
        Message("assistant", (ToolUseBlock("s1", "browser__shot", {}),)),
        Message("user", (ToolResultBlock("s1", "", images=(ImageBlock("AAAA", "image/jpeg"),)),)),
    ]
    (call,) = replay_updates(messages, CWD, {"browser__shot": "photograph"})
    assert wire(call)["kind"] == "other"
    assert wire(call)["title"] == "browser: shot"
    assert wire(call)["content"] == [
        {"type": "content", "content": {"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}}
    ]
