"""MCP servers from config.toml, end to end: ``openheim mcp list`` and a run that uses one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim
from tests.mcp.conftest import SERVER


def mcp_config(home: Path, server: FakeLLMServer | None, *, broken: bool = False) -> None:
    configure(home, server)
    args = json.dumps([str(SERVER), "stdio", "cli"])
    text = (home / "config.toml").read_text()
    text += f"\n[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
    if broken:
        text += '\n[mcp_servers.gone]\ncommand = "/nonexistent/mcp-server"\n'
    (home / "config.toml").write_text(text)


def test_mcp_list_reports_each_server(home: Path, work: Path) -> None:
    mcp_config(home, None, broken=True)
    result = openheim("mcp", "list", home=home, cwd=work)
    lines = result.stdout.splitlines()
    demo = next(line for line in lines if line.startswith("demo"))
    gone = next(line for line in lines if line.startswith("gone"))
    assert "connected" in demo and "tools" in demo and "stdio" in demo
    assert "failed" in gone
    assert result.returncode == 1  # one server is down


def test_a_run_calls_an_mcp_tool(home: Path, work: Path) -> None:
    call = FakeToolCall("demo__echo", {"text": "ping through mcp"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), "done"]) as server:
        mcp_config(home, server)
        result = openheim("run", "use the echo tool", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    names = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert "demo__echo" in names
    told = next(m for m in server.requests[1].messages if m.get("role") == "tool")["content"]
    assert "ping through mcp" in told


def test_a_provider_error_with_an_mcp_server_is_one_line(home: Path, work: Path) -> None:
    mcp_config(home, None)  # the provider's port has no listener
    text = (home / "config.toml").read_text()
    no_retries = text.replace("]\napi_base", "]\nmax_retries = 0\napi_base", 1)
    (home / "config.toml").write_text(no_retries)
    result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "ExceptionGroup" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("openheim: error: ") and "127.0.0.1:9" in lines[-1]
    assert all(line.startswith("openheim: ") for line in lines), result.stderr
