"""``before_turn``: what a client opening a session mid-turn is shown from the store (the
messages before the turn, then its prompt) before the turn's frames are replayed to it."""

from __future__ import annotations

import pytest

from openheim.messages import Message, ToolResultBlock, ToolUseBlock
from openheim.server.turns import Turn, before_turn

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
EARLIER = [Message.user("hello"), Message.assistant("Hi.")]
PROMPT = Message.user("list the files")
CALL = Message("assistant", (ToolUseBlock("c1", "list_dir", {"path": "."}),))
RESULT = Message("user", (ToolResultBlock("c1", "a.txt"),))

ROWS = {
    "the prompt not stored yet": (EARLIER, PROMPT, [*EARLIER, PROMPT]),
    "the prompt stored": ([*EARLIER, PROMPT], PROMPT, [*EARLIER, PROMPT]),
    "the turn's tool call stored": ([*EARLIER, PROMPT, CALL, RESULT], PROMPT, [*EARLIER, PROMPT]),
    "the first turn": ([], PROMPT, [PROMPT]),
    "a secret, stored redacted": (
        [*EARLIER, Message.user("key [REDACTED]"), CALL],
        Message.user(f"key {SECRET}"),
        [*EARLIER, Message.user("key [REDACTED]")],
    ),
    "an earlier different prompt": (
        [Message.user("other"), CALL],
        PROMPT,
        [Message.user("other"), CALL, PROMPT],
    ),
}


@pytest.mark.parametrize(("stored", "prompt", "shown"), ROWS.values(), ids=ROWS.keys())
def test_before_turn(stored: list[Message], prompt: Message, shown: list[Message]) -> None:
    assert before_turn(stored, Turn(7, prompt)) == shown
