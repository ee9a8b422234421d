"""``session/cancel`` over ``/acp`` reaches a prompt that the connection does not run: one a
``/ws`` client started on the same server, and one running on another replica sharing the
PostgreSQL store (the way a ``/ws`` client's ``cancel`` does). The editor sees no frames of
those prompts (a prompt streams to the connection that sent it and to ``/ws`` clients); its
permission requests reach the connection that runs it, always on the replica that runs it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.ws import create_websocket_stream

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import RecordingClient
from tests.server.support import TOKEN, Socket, served
from tests.server.test_replicas import replicas

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _write(name: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": "hi\n"})])


@asynccontextmanager
async def editor(url: str, work: Path, session_id: str) -> AsyncIterator[ClientSideConnection]:
    """An ACP client on ``url``'s ``/acp`` with ``session_id`` loaded."""
    client = RecordingClient()
    transport = await create_websocket_stream(
        url.replace("http://", "ws://") + "/acp", headers=AUTH
    )
    conn = ClientSideConnection(client, transport, use_unstable_protocol=True)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities
        )
        await conn.load_session(cwd=str(work), session_id=session_id)
        yield conn
    finally:
        await conn.close()


async def _waiting(runner: Socket) -> str:
    """Open a session on ``runner`` and start a prompt that waits for an approval."""
    sid = str((await runner.call("agent", type="open"))["session_id"])
    await runner.call("agent", type="prompt", session_id=sid, text="go")
    await runner.until(lambda d: d.get("type") == "approval_request")
    return sid


def _cancelled(events: list[dict[str, Any]], work: Path) -> None:
    """The prompt ended as cancelled, before its approved write."""
    assert events[-1]["event"]["type"] == "finished"
    assert events[-1]["event"]["stop_reason"] == "cancelled"
    assert not (work / "a.txt").exists()


async def test_an_editor_cancels_a_prompt_of_the_web_client_on_the_same_server(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([_write("a.txt")]) as llm:
        async with served(home, work, llm) as server:
            url = server.url.replace("http://", "ws://") + "/ws"
            async with Socket(url, AUTH, {}) as runner:
                sid = await _waiting(runner)
                async with editor(server.url, work, sid) as conn:
                    await conn.cancel(session_id=sid)
                    events = await runner.events_until_finished(sid)
    _cancelled(events, work)


async def test_an_editor_on_one_replica_cancels_a_prompt_running_on_another(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    with (
        FakeLLMServer([_write("a.txt")]) as llm,
        replicas(tmp_path, work, llm, pg_url, 2) as (a, b),
    ):
        async with a.socket() as runner:
            sid = await _waiting(runner)
            async with editor(b.url, work, sid) as conn:
                await conn.cancel(session_id=sid)
                events = await runner.events_until_finished(sid)
    _cancelled(events, work)
