"""``openheim acp`` at the byte level: malformed input gets JSON-RPC errors with the right codes,
stdout carries only protocol messages, and the process ends cleanly on EOF and SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.acp.schema import AgentMessageValidator
from tests.cli.test_cli import configure, env_for
from tests.mcp.conftest import SERVER, tagged_pids


class RawAgent:
    """``openheim acp`` on plain pipes; every stdout line is parsed and schema-checked."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.validator = AgentMessageValidator()
        self.next_id = 0

    async def send_line(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.validator.feed(message, from_agent=False)
        await self.send_line(json.dumps(message))
        return await self.reply(self.next_id)

    async def reply(self, request_id: int | None) -> dict[str, Any]:
        """The next response with ``request_id``, skipping notifications."""
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), 30)
            assert line, "openheim acp closed stdout"
            message = json.loads(line)  # every stdout line must be JSON
            self.validator.feed(message, from_agent=True)
            if "method" not in message and message.get("id") == request_id:
                return dict(message)


async def start(home: Path, work: Path, extra: str = "") -> RawAgent:
    configure(home, None, extra=extra)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openheim", "acp", cwd=work, env=env_for(home),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return RawAgent(process)


async def test_malformed_messages_get_the_right_error_codes(home: Path, work: Path) -> None:
    agent = await start(home, work)
    await agent.send_line("this is not json")
    not_json = await agent.reply(None)
    await agent.send_line("[1, 2]")
    batch = await agent.reply(None)
    unknown = await agent.request("session/nope", {})
    init = await agent.request("initialize", {"protocolVersion": 1})
    no_cwd = await agent.request("session/new", {"mcpServers": []})
    sse_server = {"type": "sse", "name": "s", "url": "http://127.0.0.1:9/", "headers": []}
    sse = await agent.request("session/new", {"cwd": str(work), "mcpServers": [sse_server]})
    new = await agent.request("session/new", {"cwd": str(work), "mcpServers": []})
    sid = new["result"]["sessionId"]
    audio = await agent.request(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
    )
    empty = await agent.request("session/prompt", {"sessionId": sid, "prompt": []})
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    code = await asyncio.wait_for(agent.process.wait(), 30)
    assert not_json["error"]["code"] == -32700 and not_json["id"] is None
    assert batch["error"]["code"] == -32600
    assert unknown["error"]["code"] == -32601
    assert init["result"]["protocolVersion"] == 1
    assert no_cwd["error"]["code"] == -32602
    assert sse["error"]["code"] == -32602 and "sse" in json.dumps(sse["error"]["data"])
    assert audio["error"]["code"] == -32602 and "audio" in json.dumps(audio["error"]["data"])
    assert empty["error"]["code"] == -32602
    assert code == 0
    agent.validator.assert_valid()


async def test_sigterm_closes_sessions_and_their_servers(home: Path, work: Path) -> None:
    tag = f"oh-acp-term-{id(work)}"
    agent = await start(home, work, '\n[acp]\nclient_mcp_servers = "stdio"\n')
    await agent.request("initialize", {"protocolVersion": 1})
    server = {"name": "t", "command": sys.executable, "args": [SERVER, "stdio", tag], "env": []}
    new = await agent.request("session/new", {"cwd": str(work), "mcpServers": [server]})
    assert "result" in new and tagged_pids(tag)
    agent.process.send_signal(signal.SIGTERM)
    code = await asyncio.wait_for(agent.process.wait(), 30)
    assert code == 0
    assert tagged_pids(tag) == []


def test_stdout_carries_only_protocol_bytes(tmp_path: Path) -> None:
    """After the switch, prints and child processes write to stderr; the protocol fd works."""
    script = (
        "import os, subprocess, sys\n"
        "from openheim.acp.stdio import _private_stdio\n"
        "_, out = _private_stdio()\n"
        "print('stray print')\n"
        "subprocess.run(['echo', 'child output'])\n"
        'os.write(out, b\'{"jsonrpc": "2.0"}\\n\')\n'
        "print('stdin now reads:', repr(sys.stdin.read()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input="protocol input\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"jsonrpc": "2.0"}\n'
    assert "stray print" in result.stderr and "child output" in result.stderr
    assert "stdin now reads: ''" in result.stderr


def test_a_bad_config_fails_before_serving(home: Path, work: Path) -> None:
    (home / "config.toml").write_text('default_provider = "fake"\nmax_iterationz = 3\n')
    result = subprocess.run(
        [sys.executable, "-m", "openheim", "acp"],
        cwd=work,
        env=env_for(home),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "max_iterationz" in result.stderr and "max_iterations" in result.stderr
