"""``/undo`` over ACP: advertised as a command of the agent, it restores the files of the last
turn(s) and rewinds the conversation (no prompt reaches the model); a file changed outside
openheim is refused by name until ``/undo --force``."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError
from acp.helpers import text_block

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import Agent, RecordingClient, acp_agent


def write(name: str, content: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": content})])


async def say(agent: Agent, sid: str, text: str) -> str:
    """Prompt ``text``; the agent's text in answer."""
    agent.client.updates.clear()
    response = await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
    assert response.stop_reason == "end_turn"
    return agent.client.text(sid)


async def test_undo_restores_the_files_and_rewinds(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [write("a.txt", "one\n"), "wrote one"]
    replies += [write("a.txt", "two\n"), "wrote two", "after the undo"]
    client = RecordingClient(answers=["allow_always"])
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            nothing = await say(agent, sid, "/undo")
            await say(agent, sid, "first")
            await say(agent, sid, "second")
            assert (work / "a.txt").read_text() == "two\n"
            asked = len(server.requests)
            undone = await say(agent, sid, "/undo")
            assert (work / "a.txt").read_text() == "one\n"
            assert len(server.requests) == asked  # the model was not asked
            (work / "a.txt").write_text("mine\n")
            refused = await say(agent, sid, "/undo")
            assert (work / "a.txt").read_text() == "mine\n"
            with pytest.raises(RequestError) as bad:
                await say(agent, sid, "/undo two")
            forced = await say(agent, sid, "/undo --force")
            await say(agent, sid, "third")
    assert nothing.startswith("undo refused: ") and "nothing to undo" in nothing
    assert undone == f"undid 1 turn\nrestored {work / 'a.txt'}"
    changed = "undo refused: changed outside openheim since the checkpoint: "
    assert refused.startswith(f"{changed}{work / 'a.txt'}\n")
    assert "/undo --force" in refused
    assert bad.value.code == -32602
    assert "undo takes a number of turns" in str(bad.value.data)
    assert forced == f"undid 1 turn\nremoved {work / 'a.txt'}"
    assert not (work / "a.txt").exists()
    sent = [str(m.get("content")) for m in server.requests[-1].messages]
    assert sent[-1] == "third" and not any("first" in m or "second" in m for m in sent)
