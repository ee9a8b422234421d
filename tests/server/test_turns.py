"""``before_turn``: what a client opening a session mid-turn is shown from the store (the
messages before the turn, then its prompt) before the turn's frames are replayed to it, and the
``Turn`` a ``Live`` records when a prompt starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.messages import Message, ToolResultBlock, ToolUseBlock
from openheim.server.turns import Turn, before_turn
from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import served

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
EARLIER = [Message.user("hello"), Message.assistant("Hi.")]
PROMPT = Message.user("hello")
CALL = Message("assistant", (ToolUseBlock("c1", "list_dir", {"path": "."}),))
RESULT = Message("user", (ToolResultBlock("c1", "a.txt"),))

ROWS = {
    "the prompt not stored yet": (EARLIER, 2, PROMPT, [*EARLIER, PROMPT]),
    "the prompt stored": ([*EARLIER, PROMPT], 2, PROMPT, [*EARLIER, PROMPT]),
    "the turn's tool call stored": (
        [*EARLIER, PROMPT, CALL, RESULT],
        2,
        PROMPT,
        [*EARLIER, PROMPT],
    ),
    "the first turn": ([], 0, PROMPT, [PROMPT]),
    "the first turn, stored": ([PROMPT, CALL], 0, PROMPT, [PROMPT]),
    "a secret, shown redacted": (
        EARLIER,
        2,
        Message.user(f"key {SECRET}"),
        [*EARLIER, Message.user("key [REDACTED]")],
    ),
}


@pytest.mark.parametrize(("stored", "before", "prompt", "shown"), ROWS.values(), ids=ROWS.keys())
def test_before_turn(
    stored: list[Message], before: int, prompt: Message, shown: list[Message]
) -> None:
    assert before_turn(stored, Turn(7, before, prompt)) == shown


async def test_a_session_opened_mid_turn_gets_the_turn_from_its_frames(
    home: Path, work: Path
) -> None:
    stalled = FakeReply(chunks=["The ", "quick ", "brown ", "fox."], hang_at=3)
    with FakeLLMServer(["Hi.", stalled]) as llm:
        async with (
            served(home, work, llm) as server,
            server.socket() as ws,
            server.client() as http,
        ):
            opened = await ws.call("agent", type="open")
            key = opened["session_id"]
            await ws.call("agent", type="prompt", session_id=key, text="hello")
            await ws.events_until_finished(key)
            await ws.call("agent", type="prompt", session_id=key, text="hello")
            await ws.until(lambda d: d.get("event", {}).get("text") == "quick ")
            shown = (await http.get(f"/api/sessions/{key}")).json()
            async with server.socket() as late:
                reply = await late.call("agent", type="resume", session_id=key, after=shown["seq"])
                texts = [f["data"]["event"].get("text") for f in late.seen if "event" in f["data"]]
            await ws.call("agent", type="cancel", session_id=key)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user"]
    assert shown["messages"][1]["content"][0]["text"] == "Hi."
    assert shown["live"]["busy"] and reply["replayed"] >= 2
    assert "".join(t for t in texts if t) == "The quick "  # the answer from its start
