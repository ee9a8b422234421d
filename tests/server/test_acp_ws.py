"""``/acp``: the ACP SDK's own WebSocket client transport (``acp.ws``) drives openheim through a
real uvicorn, and every message the agent sends is validated against the ACP schema."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import McpServerStdio
from acp.ws import create_websocket_stream
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import RecordingClient
from tests.acp.schema import AgentMessageValidator
from tests.server.support import TOKEN, served

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_the_sdk_client_drives_a_session_over_acp_ws(home: Path, work: Path) -> None:
    write = FakeToolCall("write_file", {"path": "out.txt", "content": "made\n"})
    replies: list[FakeReply | str] = [FakeReply(tool_calls=[write]), "All done."]
    client = RecordingClient(answers=["allow_once"])
    validator = AgentMessageValidator()
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm) as server:
            url = server.url.replace("http://", "ws://") + "/acp"
            transport = await create_websocket_stream(url, headers=AUTH)
            conn = ClientSideConnection(
                client, transport, use_unstable_protocol=True, observers=[validator.observer]
            )
            try:
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities
                )
                session = await conn.new_session(cwd=str(work))
                result = await conn.prompt(
                    session_id=session.session_id, prompt=[text_block("make a file")]
                )
            finally:
                await conn.close()
    assert init.protocol_version == PROTOCOL_VERSION
    assert result.stop_reason == "end_turn"
    assert (work / "out.txt").read_text() == "made\n"
    assert "All done." in client.text()
    assert len(client.permission_requests) == 1
    validator.assert_valid()


async def test_acp_ws_needs_the_token(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            url = server.url.replace("http://", "ws://") + "/acp"
            with pytest.raises(InvalidStatus):
                await create_websocket_stream(url)


async def test_an_app_composed_without_acp_has_no_acp(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, acp=None) as server:
            base = server.url.replace("http://", "ws://")
            with pytest.raises(InvalidStatus) as refused:
                await create_websocket_stream(base + "/acp", headers=AUTH)
            async with connect(base + "/ws", additional_headers=AUTH):
                pass  # the rest of the app is there
    assert refused.value.response.status_code in (403, 404)


async def test_bad_frames_get_json_rpc_errors_and_the_socket_stays(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_frame=4096) as server:
            url = server.url.replace("http://", "ws://") + "/acp"
            async with connect(url, additional_headers=AUTH) as ws:
                await ws.send("{not json")
                parse = json.loads(await ws.recv())
                await ws.send(
                    '{"jsonrpc": "2.0", "id": 1, "method": "x", "pad": "' + "y" * 5000 + '"}'
                )
                big = json.loads(await ws.recv())
                request = {"jsonrpc": "2.0", "id": 7, "method": "initialize"}
                params = {"params": {"protocolVersion": 1}}
                await ws.send(json.dumps(request | params, indent=1))  # line breaks inside
                init = json.loads(await ws.recv())
    assert parse["error"]["code"] == -32700
    assert big["error"]["code"] == -32600
    assert init["id"] == 7 and init["result"]["protocolVersion"] == PROTOCOL_VERSION


async def test_the_token_does_not_run_a_clients_stdio_mcp_server(home: Path, work: Path) -> None:
    marker = home / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    probe = McpServerStdio(name="probe", command=sys.executable, args=["-c", code], env=[])
    client = RecordingClient()
    with FakeLLMServer() as llm:
        async with served(home, work, llm, extra='approval = "deny"') as server:
            url = server.url.replace("http://", "ws://") + "/acp"
            transport = await create_websocket_stream(url, headers=AUTH)
            conn = ClientSideConnection(client, transport, use_unstable_protocol=True)
            try:
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(work), mcp_servers=[probe])
                async with asyncio.timeout(10):
                    while not client.notices(session.session_id):
                        await asyncio.sleep(0.02)
            finally:
                await conn.close()
    assert not marker.exists()
    told = client.notices(session.session_id)[0].content.text
    assert "'probe' from the client was not started" in told
    assert 'client_mcp_servers = "stdio"' in told
