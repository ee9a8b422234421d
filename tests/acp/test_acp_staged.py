"""Staged file changes over ACP: applying a token is asked about like any write, and an editor
that rejects every permission request gets nothing written."""

from __future__ import annotations

from pathlib import Path

from acp.helpers import text_block

from openheim.testing import FakeLLMServer
from tests.acp.harness import RecordingClient, acp_agent
from tests.cli.test_approvals_cli import preview_and_apply

STAGED = 'file_changes = "staged"'
PLANTED = (".openheim/permissions.toml", ".git/hooks/post-checkout", "a.txt")
PLANTED_TEXT = "planted\n"


def tool_results(server: FakeLLMServer) -> list[str]:
    messages = server.requests[-1].messages
    return [str(m["content"]) for m in messages if m.get("role") == "tool"]


async def test_an_editor_that_rejects_everything_gets_nothing_written(
    home: Path, work: Path
) -> None:
    client = RecordingClient()  # answers reject_once to every request
    with FakeLLMServer(preview_and_apply(*PLANTED, content=PLANTED_TEXT)) as server:
        async with acp_agent(home, work, server, client, top=STAGED) as agent:
            await agent.start()
            sid = await agent.new()
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("stage")])
    assert response.stop_reason == "end_turn"
    assert [p for p in PLANTED if (work / p).exists()] == []
    assert [r.raw_input["token"][:4] for r in client.permission_requests] == ["chg_"] * 3
    results = tool_results(server)
    assert [r.startswith("staged a new file") for r in results] == [True, False] * 3
    assert all("rejected" in r for r in results[1::2])


async def test_the_editor_sees_the_staged_diff_and_its_yes_applies_it(
    home: Path, work: Path
) -> None:
    client = RecordingClient(answers=["allow_once", "allow_once"])
    with FakeLLMServer(
        preview_and_apply("a.txt", ".vscode/tasks.json", content=PLANTED_TEXT)
    ) as server:
        async with acp_agent(home, work, server, client, top=STAGED) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("stage")])
    assert (work / "a.txt").read_text() == "planted\n"
    assert (work / ".vscode/tasks.json").read_text() == "planted\n"
    texts = ["\n".join(c.content.text for c in r.content or []) for r in client.permission_requests]
    assert "+++ b/a.txt" in texts[0] and "+planted" in texts[0]
    assert ".vscode/tasks.json, a protected path" in texts[1]
