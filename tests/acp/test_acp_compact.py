"""``/compact`` over ACP: advertised as a command, done by the agent itself (no prompt reaches
the model besides the summary request), its outcome sent as the agent's message."""

from __future__ import annotations

from pathlib import Path

from acp.helpers import text_block

from openheim.testing import FakeLLMServer, FakeReply
from openheim.testing.fake_replies import RecordedRequest
from tests.acp.harness import acp_agent

LONG = "tell me about it " * 30


def answer(request: RecordedRequest) -> FakeReply:
    system = str(request.messages[0].get("content"))
    return FakeReply(text="SUMMARY of one" if system.startswith("You compact") else "ok")


async def test_compact_is_a_slash_command_of_the_agent(home: Path, work: Path) -> None:
    with FakeLLMServer(default=answer) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            nothing = await agent.conn.prompt(session_id=sid, prompt=[text_block("/compact")])
            told_nothing = agent.client.text(sid)
            for text in (f"one {LONG}", f"two {LONG}"):
                await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
            before = len(server.requests)
            done = await agent.conn.prompt(session_id=sid, prompt=[text_block("/compact")])
            told = agent.client.text(sid)
            await agent.conn.prompt(session_id=sid, prompt=[text_block("three")])
    assert (nothing.stop_reason, done.stop_reason) == ("end_turn", "end_turn")
    assert told_nothing == "nothing to compact yet"
    assert "compacted 2 older messages into a summary (about " in told
    assert len(server.requests) == before + 2  # the summary request, then "three"
    sent = str(server.requests[-1].messages)
    assert "SUMMARY of one" in sent and "one tell" not in sent
