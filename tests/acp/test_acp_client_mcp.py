"""ACP: which of a client's ``mcpServers`` are started is the user's choice (``[acp]
client_mcp_servers``), whatever else the config allows; a server left out is not run, and the
client is told in one line which key allows it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from acp.schema import HttpMcpServer, McpServerStdio

from openheim.testing import FakeLLMServer
from tests.acp.harness import Agent, acp_agent
from tests.mcp.conftest import http_url, tag

__all__ = ["http_url", "tag"]  # fixtures of the MCP tests, used here too

WAIT = 20.0
LOCKED = 'approval = "deny"\nallow_shell = false\n'
"""The strictest policy: still no reason to run a client's command."""


def acp_table(value: str | None) -> str:
    return "" if value is None else f'\n[acp]\nclient_mcp_servers = "{value}"\n'


def marker_server(marker: Path) -> McpServerStdio:
    """A 'server' whose command only proves it ran, by creating ``marker``."""
    code = f"open({str(marker)!r}, 'w').close()"
    return McpServerStdio(name="probe", command=sys.executable, args=["-c", code], env=[])


async def notices_of(agent: Agent, sid: str, count: int) -> list[str]:
    """The first ``count`` notices sent to ``sid`` (they follow the session/new response)."""
    async with asyncio.timeout(WAIT):
        while len(agent.client.notices(sid)) < count:
            await asyncio.sleep(0.02)
    return [u.content.text for u in agent.client.notices(sid)]


@pytest.mark.parametrize(
    ("setting", "runs"),
    [
        (None, False),
        ("http", False),
        ("none", False),
        ("stdio", True),
    ],
)
async def test_a_stdio_server_runs_only_when_the_user_allows_it(
    home: Path, work: Path, setting: str | None, runs: bool
) -> None:
    marker = home / "ran"
    with FakeLLMServer() as llm:
        async with acp_agent(home, work, llm, top=LOCKED, extra=acp_table(setting)) as agent:
            await agent.start()
            sid = await agent.new(mcp_servers=[marker_server(marker)])
            told = await notices_of(agent, sid, 0 if runs else 1)
    assert marker.exists() is runs
    if not runs:
        assert len(told) == 1
        assert "MCP server 'probe' from the client was not started" in told[0]
        assert 'client_mcp_servers = "stdio" under [acp] in' in told[0]
        assert "in $OPENHEIM_HOME/config.toml" in told[0]
        assert str(home) not in told[0]  # the client is told the file, not this machine's path
        assert "probe" in (home / "acp-stderr.log").read_text()


@pytest.mark.parametrize(("setting", "connected"), [(None, True), ("none", False)])
async def test_an_http_server_is_allowed_by_default_and_refused_by_none(
    home: Path, work: Path, http_url: str, setting: str | None, connected: bool
) -> None:
    entry = HttpMcpServer(type="http", name="web", url=http_url, headers=[])
    with FakeLLMServer() as llm:
        async with acp_agent(home, work, llm, extra=acp_table(setting)) as agent:
            init = await agent.start()
            sid = await agent.new(mcp_servers=[entry])
            told = await notices_of(agent, sid, 0 if connected else 1)
    assert init.agent_capabilities.mcp_capabilities.http is connected
    assert any('client_mcp_servers = "http"' in line for line in told) is not connected


async def test_an_untrusted_project_cannot_allow_stdio_servers(home: Path, work: Path) -> None:
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text(acp_table("stdio"))
    marker = home / "ran"
    with FakeLLMServer() as llm:
        async with acp_agent(home, work, llm) as agent:
            await agent.start()
            sid = await agent.new(mcp_servers=[marker_server(marker)])
            told = await notices_of(agent, sid, 1)
    assert not marker.exists()
    assert "was not started" in told[0]
