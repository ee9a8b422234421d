"""``replay_events``: a stored conversation as the events a surface saw live."""

from __future__ import annotations

from openheim.events import TextDelta, ThinkingDelta, ToolCall, ToolResult
from openheim.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    tool_results_message,
)
from openheim.runtime.replay import UserTurn, replay_events


def test_a_turn_with_tools_replays_in_order() -> None:
    history = [
        Message.user("list files"),
        Message(
            "assistant",
            (
                ThinkingBlock("let me look"),
                TextBlock("Looking."),
                ToolUseBlock("c1", "list_directory", {"path": "."}),
                ToolUseBlock("c2", "write_file", {"path": "x"}),
            ),
        ),
        tool_results_message(
            [
                ToolResultBlock("c1", "a.txt"),
                ToolResultBlock("c2", "denied: the user said no", is_error=True),
            ]
        ),
        Message.assistant("There is a.txt."),
    ]
    replayed = list(replay_events(history))
    assert replayed == [
        UserTurn("list files"),
        ThinkingDelta("let me look"),
        TextDelta("Looking."),
        ToolCall("c1", "list_directory", {"path": "."}),
        ToolCall("c2", "write_file", {"path": "x"}),
        ToolResult("c1", "list_directory", "a.txt", False, "completed"),
        ToolResult("c2", "write_file", "denied: the user said no", True, "denied"),
        TextDelta("There is a.txt."),
    ]


def test_cancelled_and_failed_results_keep_their_status() -> None:
    history = [
        Message("assistant", (ToolUseBlock("c1", "shell"), ToolUseBlock("c2", "shell"))),
        tool_results_message(
            [
                ToolResultBlock("c1", "cancelled: the user stopped the run", is_error=True),
                ToolResultBlock("c2", "exit 1", is_error=True),
            ]
        ),
    ]
    statuses = [e.status for e in replay_events(history) if isinstance(e, ToolResult)]
    assert statuses == ["cancelled", "failed"]
