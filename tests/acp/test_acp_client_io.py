"""What the editor offers is used: ``fs/*`` for the file tools, ``terminal/*`` for commands,
and MCP servers handed over in ``session/new``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp.helpers import text_block
from acp.schema import HttpMcpServer, McpServerStdio

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import RecordingClient, acp_agent
from tests.mcp.conftest import SERVER, http_url, tag, tagged_pids

__all__ = ["http_url", "tag"]  # fixtures of the MCP tests, used here too


def calls(*tool_calls: FakeToolCall) -> FakeReply:
    return FakeReply(tool_calls=list(tool_calls))


async def test_file_tools_go_through_the_editor(home: Path, work: Path) -> None:
    (work / "a.txt").write_text("on disk\n")
    replies: list[FakeReply | str] = [
        calls(FakeToolCall("read_file", {"path": "a.txt"})),
        calls(FakeToolCall("write_file", {"path": "b.txt", "content": "new\n"})),
        "done",
    ]
    client = RecordingClient(answers=["allow_once"], fs=True)
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("copy")])
    methods = [(m, p["path"]) for m, p in client.calls]
    assert methods == [
        ("fs/read_text_file", str(work / "a.txt")),
        ("fs/write_text_file", str(work / "b.txt")),
    ]
    assert (work / "b.txt").read_text() == "new\n"
    told = [m["content"] for m in server.requests[1].messages if m.get("role") == "tool"]
    assert told == ["on disk\n"]


async def test_the_sandbox_holds_before_the_editor_is_asked(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [
        calls(FakeToolCall("read_file", {"path": "../../etc/passwd"})),
        "done",
    ]
    client = RecordingClient(answers=["allow_once"], fs=True)
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("peek")])
    assert client.calls == []
    told = next(m["content"] for m in server.requests[1].messages if m.get("role") == "tool")
    assert "outside" in told


async def test_commands_run_in_editor_terminals(
    home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-0123456789")  # the editor's, and openheim's
    command = "echo from-terminal ${DEPLOY_TOKEN:-unset}; exit 3"
    replies: list[FakeReply | str] = [
        calls(FakeToolCall("execute_command", {"command": command})),
        "done",
    ]
    client = RecordingClient(answers=["allow_once"], terminal=True)
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client, args=("--allow-shell",)) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("run it")])
    methods = [m for m, _ in client.calls]
    assert methods == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    created = client.calls[0][1]
    assert created["args"][-3:] == ["/bin/sh", "-c", command]
    assert created["cwd"] == str(work)
    assert client.released == list(client.terminals)
    told = next(m["content"] for m in server.requests[1].messages if m.get("role") == "tool")
    assert "exit code: 3\n--- stdout ---\nfrom-terminal unset" in told
    live = [u for u in client.of_kind("tool_call_update") if u.status == "in_progress"]
    assert live[0].content[0].terminal_id == "term-1"


async def test_a_timed_out_terminal_is_killed_and_released(home: Path, work: Path) -> None:
    command = {"command": "sleep 60", "timeout": 1}
    replies: list[FakeReply | str] = [calls(FakeToolCall("execute_command", command)), "done"]
    client = RecordingClient(answers=["allow_once"], terminal=True)
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client, args=("--allow-shell",)) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("wait")])
    methods = [m for m, _ in client.calls]
    assert "terminal/kill" in methods and methods[-1] == "terminal/release"
    told = next(m["content"] for m in server.requests[1].messages if m.get("role") == "tool")
    assert "timed out after 1 s" in told


async def test_an_mcp_server_from_the_client_is_used(home: Path, work: Path) -> None:
    tag = f"oh-acp-mcp-{id(work)}"
    server_entry = McpServerStdio(
        name="helper", command=sys.executable, args=[SERVER, "stdio", tag], env=[]
    )
    replies: list[FakeReply | str] = [calls(FakeToolCall("helper__echo", {"text": "ping"})), "done"]
    allow = '\n[acp]\nclient_mcp_servers = "stdio"\n'
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, extra=allow) as agent:
            await agent.start()
            response = await agent.conn.new_session(cwd=str(work), mcp_servers=[server_entry])
            sid = response.session_id
            await agent.conn.prompt(session_id=sid, prompt=[text_block("echo")])
            offered = {t["function"]["name"] for t in server.requests[0].body["tools"]}
            await agent.conn.close_session(session_id=sid)
            assert tagged_pids(tag) == []
    assert "helper__echo" in offered
    told = next(m["content"] for m in server.requests[1].messages if m.get("role") == "tool")
    assert "ping" in told


async def test_an_http_mcp_server_from_the_client_is_used(
    home: Path, work: Path, http_url: str
) -> None:
    entry = HttpMcpServer(type="http", name="web", url=http_url, headers=[])
    replies: list[FakeReply | str] = [
        calls(FakeToolCall("web__echo", {"text": "over http"})),
        "done",
    ]
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            response = await agent.conn.new_session(cwd=str(work), mcp_servers=[entry])
            await agent.conn.prompt(session_id=response.session_id, prompt=[text_block("echo")])
    told = next(m["content"] for m in server.requests[1].messages if m.get("role") == "tool")
    assert "over http" in told
