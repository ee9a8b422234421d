"""A JSON value nested 2,000 or 100,000 deep on every surface that decodes JSON from outside:
each answers with its protocol's parse error and goes on answering the next valid request.

One row per surface and depth. Each surface is the real one: ``openheim acp`` and
``openheim mcp serve`` as subprocesses on stdio, ``/acp`` and ``/ws`` of a served app on
uvicorn, the Telegram webhook app on uvicorn, an OpenAI-compatible provider reading a raw
event stream from a loopback server."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from websockets.asyncio.client import connect

from openheim.errors import ProviderProtocolError
from openheim.events import TextDelta
from openheim.gateway.inbound import Inbound
from openheim.gateway.webhooks import telegram_routes
from openheim.providers import create_provider
from openheim.testing import FakeLLMServer
from tests.cli.test_cli import configure, env_for
from tests.gateway.loopback import serving
from tests.providers.support import drain, request
from tests.providers.test_sse_direct import STREAM_HEAD, settings
from tests.providers.test_sse_stream import events
from tests.providers.transport_server import Server, read_request
from tests.server.support import TOKEN, served

WAIT = 60.0
PARSE_ERROR = {"code": -32700, "message": "Parse error"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "deep", "version": "1"},
    },
}


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_request(depth: int) -> str:
    return '{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": ' + deep(depth) + "}"


async def _line(stream: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(stream.readline(), WAIT)
    assert line, "the process closed its output"
    found: dict[str, Any] = json.loads(line)
    return found


async def _spawn(home: Path, work: Path, *args: str) -> asyncio.subprocess.Process:
    configure(home, None)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "openheim",
        *args,
        cwd=work,
        env=env_for(home),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _finish(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    code = await asyncio.wait_for(proc.wait(), WAIT)
    stderr = (await proc.stderr.read()).decode()
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr
    assert code == 0, stderr


async def acp_stdio(depth: int, home: Path, work: Path) -> None:
    proc = await _spawn(home, work, "acp")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(f"{deep_request(depth)}\n{json.dumps(INIT)}\n".encode())
        await proc.stdin.drain()
        error, init = await _line(proc.stdout), await _line(proc.stdout)
    finally:
        await _finish(proc)
    assert error["id"] is None and error["error"]["code"] == -32700
    assert "nested more than 128 levels deep" in error["error"]["data"]["details"]
    assert init["id"] == 1 and "result" in init


async def mcp_stdio(depth: int, home: Path, work: Path) -> None:
    proc = await _spawn(home, work, "mcp", "serve")
    assert proc.stdin is not None and proc.stdout is not None
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    try:
        proc.stdin.write(f"{json.dumps(MCP_INIT)}\n{json.dumps(initialized)}\n".encode())
        proc.stdin.write(f"{deep_request(depth)}\n{json.dumps(listing)}\n".encode())
        await proc.stdin.drain()
        init, error, tools = [await _line(proc.stdout) for _ in range(3)]
    finally:
        await _finish(proc)
    assert init["id"] == 1
    assert error["id"] is None and error["error"]["code"] == -32700
    assert tools["id"] == 3 and tools["result"]["tools"]


async def acp_ws(depth: int, home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_frame=1 << 20) as server:
            url = server.url.replace("http://", "ws://") + "/acp"
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with connect(url, additional_headers=headers, max_size=None) as ws:
                await ws.send(deep_request(depth))
                error = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
                await ws.send(json.dumps(INIT))
                init = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
    assert error["id"] is None and error["error"]["code"] == -32700
    assert init["id"] == 1 and "result" in init


async def ws(depth: int, home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_frame=1 << 20) as server, server.socket() as sock:
            await sock.raw(
                '{"channel": "system", "data": {"type": "ping", "x": ' + deep(depth) + "}}"
            )
            await sock.raw('{"channel": "system", "data": ' + deep(depth) + "}")
            errors = [await sock.next(), await sock.next()]
            pong = await sock.call("system", type="ping")
    for error in errors:
        assert error["channel"] == "system" and error["data"]["type"] == "error"
        assert "nested more than 128 levels deep" in error["data"]["message"]
    assert pong["type"] == "pong"


async def telegram_webhook(depth: int, home: Path, work: Path) -> None:
    delivered: list[Inbound] = []

    async def deliver(message: Inbound) -> None:
        delivered.append(message)

    secret = {"X-Telegram-Bot-Api-Secret-Token": "s3cret"}
    update = {
        "update_id": 1,
        "message": {"message_id": 2, "from": {"id": 3}, "chat": {"id": 3}, "text": "hi"},
    }
    app = Starlette(routes=telegram_routes("s3cret", deliver))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=WAIT) as client:
        refused = await client.post(
            "/telegram", content='{"x": ' + deep(depth) + "}", headers=secret
        )
        taken = await client.post("/telegram", json=update, headers=secret)
    assert (refused.status_code, refused.text) == (400, "the update is not JSON")
    assert taken.status_code == 200
    assert [m.text for m in delivered] == ["hi"]


async def provider_stream(depth: int, home: Path, work: Path) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        bodies = [f'data: {{"x": {deep(depth)}}}\n\n'.encode(), events("fine")]
        for body in bodies:
            await read_request(reader)
            writer.write(STREAM_HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            await writer.drain()

    async with Server(handler) as server:
        provider = create_provider(settings(server.port))
        try:
            with pytest.raises(ProviderProtocolError) as caught:
                await drain(provider, request())
            second, _ = await drain(provider, request())
        finally:
            await provider.aclose()
    assert "sent a stream event that is not JSON" in caught.value.message
    assert "\n" not in caught.value.message
    assert second == [TextDelta("fine")]


Surface = Callable[[int, Path, Path], Awaitable[None]]
SURFACES: dict[str, Surface] = {
    "acp stdio": acp_stdio,
    "acp websocket": acp_ws,
    "/ws": ws,
    "mcp serve stdio": mcp_stdio,
    "telegram webhook": telegram_webhook,
    "provider stream": provider_stream,
}


@pytest.mark.parametrize(
    ("surface", "depth"),
    [
        pytest.param(name, depth, id=f"{name}-{depth}")
        for name in SURFACES
        for depth in (2000, 100_000)
    ],
)
async def test_deep_json_is_a_parse_error_and_the_surface_answers_on(
    home: Path, work: Path, surface: str, depth: int
) -> None:
    await SURFACES[surface](depth, home, work)
