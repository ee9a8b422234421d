"""A replica killed with SIGKILL in the middle of a turn, behind HAProxy (``replicas.py``), each
replica on a host name of its own: a web client (``/ws``) and an editor (``/acp``) attached
through HAProxy to the replica running the prompt reconnect through HAProxy to the others;
the dead replica's lease keeps the session busy until it is stale (``[server]
lease_timeout_secs``, short here), then the session goes on there: every frame sent before
the kill is replayed, the interrupted tool call is closed with the interrupted result, and
both clients prompt it again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.ws import create_websocket_stream

from openheim.store.base import INTERRUPTED
from openheim.testing import FakeLLMServer, FakeReply
from tests.acp.harness import RecordingClient
from tests.server.replicas import REPLICAS, Fleet, fleet
from tests.server.support import TOKEN, Socket
from tests.server.test_haproxy import landed
from tests.server.test_replicas import _is, _seqs, _write

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEASE = 3.0
"""``[server] lease_timeout_secs`` of the fleet."""
SLACK = 2.0
"""Seconds past the lease the first prompt accepted elsewhere may take (reconnecting, polling)."""


async def editor(
    served: Fleet, work: Path, sid: str, on: str | None
) -> tuple[ClientSideConnection, RecordingClient, str]:
    """An ACP client through HAProxy with ``sid`` loaded, on the replica ``on`` (None: any):
    its connection, the client and the replica (HAProxy spreads connections round-robin, so
    one of ``REPLICAS`` tries lands on ``on``)."""
    for _ in range(REPLICAS):
        client = RecordingClient()
        transport = await create_websocket_stream(f"{served.ws_url}/acp", headers=AUTH)
        replica = str(transport._ws.response.headers["x-replica"])  # type: ignore[attr-defined]
        conn = ClientSideConnection(client, transport, use_unstable_protocol=True)
        if on is None or replica == on:
            caps = client.capabilities
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
            await conn.load_session(cwd=str(work), session_id=sid)
            return conn, client, replica
        await conn.close()
    raise AssertionError(f"no ACP connection landed on {on} in {REPLICAS} tries")


async def prompt_once_free(socket: Socket, sid: str, text: str, since: float) -> tuple[float, int]:
    """Send the prompt until the session takes it (the dead replica's lease gone stale),
    within ``LEASE + SLACK`` seconds of ``since``; the seconds it took and the refusals."""
    refused = 0
    while True:
        answer = await socket.call("agent", type="prompt", session_id=sid, text=text)
        took = time.monotonic() - since
        if answer["type"] != "error":
            return took, refused
        assert "busy" in answer["message"], answer
        assert took < LEASE + SLACK, f"the session is still busy {took:.1f} s after the kill"
        refused += 1
        await asyncio.sleep(0.1)


async def test_a_replica_killed_mid_turn_behind_the_load_balancer(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [_write("a.txt"), FakeReply(text="carried on"), FakeReply(text="and on")]
    extra = f"[server]\nlease_timeout_secs = {LEASE}"
    with (
        FakeLLMServer(script) as llm,
        fleet(tmp_path, work, llm, pg_url, extra, hosts=True) as served,
    ):
        async with Socket(f"{served.ws_url}/ws", AUTH, {}) as web:
            running = landed(web)
            sid = (await web.call("agent", type="open"))["session_id"]
            watching, _, _ = await editor(served, work, sid, running)
            await web.call("agent", type="prompt", session_id=sid, text="go")
            await web.until(_is("approval_request"))  # mid-turn: the tool call waits
            acknowledged = _seqs(web, sid)
            served.kill(running)
            killed_at = time.monotonic()
            await watching.close()
        async with Socket(f"{served.ws_url}/ws", AUTH, {}) as again:
            assert landed(again) not in (running, "")
            resumed = await again.call("agent", type="resume", session_id=sid, after=0)
            replayed = _seqs(again, sid)
            took, refused = await prompt_once_free(again, sid, "go on", killed_at)
            events = await again.events_until_finished(sid)
        conn, client, elsewhere = await editor(served, work, sid, None)
        try:
            loaded = list(client.updates)
            result = await conn.prompt(session_id=sid, prompt=[text_block("and on")])
        finally:
            await conn.close()
        stored = (await asyncio.to_thread(_messages, served, sid))["messages"]
        sent = llm.requests[1].messages
    assert resumed["busy"] and refused >= 1 and took <= LEASE + SLACK
    assert replayed == acknowledged and resumed["replayed"] == len(acknowledged)
    assert events[0]["seq"] == acknowledged[-1] + 1
    assert events[-1]["event"]["type"] == "finished" and events[-1]["event"]["text"] == "carried on"
    assert elsewhere != running and result.stop_reason == "end_turn"
    calls = [u for _, u in loaded if u.session_update == "tool_call"]
    assert len(calls) == 1 and calls[0].status == "failed"
    assert INTERRUPTED in str(calls[0].raw_output)
    assert "carried on" in "".join(
        u.content.text for _, u in loaded if u.session_update == "agent_message_chunk"
    )
    assert client.text(sid).endswith("and on")
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "user"]
    assert sent[3]["content"].endswith(INTERRUPTED) and sent[4]["content"] == "go on"
    assert [m["role"] for m in stored] == ["user", "assistant"] * 3
    closed, went_on = stored[2]["content"]  # the interrupted call closed before the next prompt
    assert closed["kind"] == "tool_result" and closed["content"] == INTERRUPTED
    assert went_on["text"] == "go on"
    assert not (work / "a.txt").exists()


def _messages(served: Fleet, sid: str) -> dict[str, Any]:
    answer = httpx.get(f"{served.url}/api/sessions/{sid}", headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result
