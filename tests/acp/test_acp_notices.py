"""ACP: each session's notices reach the editor on its first prompt, as message chunks marked
as notices, and one long-running agent never hands one session's notices to another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.helpers import text_block
from acp.schema import McpServerStdio

from openheim.testing import FakeLLMServer
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
