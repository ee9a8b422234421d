"""ACP: each session's notices reach the editor on its first prompt, before the answer, each as
a message of its own marked as a notice and without the absolute path of openheim's folders;
a fresh home has none; one long-running agent never hands one session's notices to another."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp.helpers import text_block
from acp.schema import McpServerStdio

from openheim.testing import FakeLLMServer, FakeReply
from tests.acp.harness import acp_agent

SESSIONS = 4
ALLOW_STDIO = '\n[acp]\nclient_mcp_servers = "stdio"\n'


def kind(update: Any) -> str:
    return str(update.field_meta["openheim"]["notice"]["kind"])


async def test_each_session_gets_its_own_notices_once(home: Path, work: Path) -> None:
    (home / "system.md").write_text("You are a test agent.\n")
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text("max_iterations = 500\n")
    broken = [
        McpServerStdio(name=f"broken{i}", command=f"/nonexistent/broken{i}", args=[], env=[])
        for i in range(SESSIONS)
    ]
    answers = [f"answer {i}" for i in range(SESSIONS + 2)]
    with FakeLLMServer(answers) as server:
        async with acp_agent(home, work, server, extra=ALLOW_STDIO) as agent:
            await agent.start()
            sids = [
                (await agent.conn.new_session(cwd=str(work), mcp_servers=[entry])).session_id
                for entry in broken
            ]
            plain = await agent.new()
            for sid in [*sids, plain]:
                await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
            await agent.conn.prompt(session_id=sids[0], prompt=[text_block("again")])
    client = agent.client
    for i, sid in enumerate(sids):
        notices = client.notices(sid)
        assert [kind(u) for u in notices] == ["trust", "mcp"]
        assert notices[0].content.text.startswith("openheim: ignored max_iterations = 500")
        assert f"'broken{i}' is unavailable" in notices[1].content.text
        assert notices[1].content.annotations.audience == ["user"]
        others = [n for n in range(SESSIONS) if n != i]
        assert not any(f"broken{n}" in u.content.text for n in others for u in notices)
    assert [kind(u) for u in client.notices(plain)] == ["trust"]
    assert client.text(sids[0]) == "answer 0answer 5"  # the second prompt brought no notice
    log = (home / "acp-stderr.log").read_text()
    assert log.count("ignored max_iterations") == 1  # at start-up, not once per session
    assert all(log.count(f"'broken{i}' is unavailable") == 1 for i in range(SESSIONS))


def chunks(updates: list[tuple[str, Any]], sid: str) -> list[Any]:
    return [u for s, u in updates if s == sid and u.session_update == "agent_message_chunk"]


async def test_a_fresh_home_gets_the_answer_and_no_notice(home: Path, work: Path) -> None:
    """No system.md and nothing else to tell: the normal first run says nothing but the answer."""
    with FakeLLMServer(["the answer"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
    assert agent.client.notices(sid) == []
    assert "".join(u.content.text for u in chunks(agent.client.updates, sid)) == "the answer"


async def test_a_notice_is_a_message_before_the_answer_without_the_home_path(
    home: Path, work: Path
) -> None:
    (home / "system.md").write_text("\n")  # empty: told once, with the file's place
    with FakeLLMServer([FakeReply(chunks=["the ", "answer"])]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
    [notice, *answer] = chunks(agent.client.updates, sid)
    assert agent.client.notices(sid) == [notice]
    assert notice.content.text == (
        "openheim: $OPENHEIM_HOME/system.md is empty: using the built-in identity (write your "
        "agent's instructions there, or delete the file)\n\n"
    )
    assert "".join(u.content.text for u in answer) == "the answer" and len(answer) == 2
    assert notice.message_id and answer[0].message_id  # both name their message
    assert {u.message_id for u in answer} == {answer[0].message_id} != {notice.message_id}
    sent = json.dumps([u.model_dump(mode="json") for _, u in agent.client.updates])
    assert str(home) not in sent and str(home.resolve()) not in sent
