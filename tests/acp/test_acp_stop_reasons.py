"""Every way a turn can end reaches the editor as its own ACP stop reason, over the real wire."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.helpers import text_block

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import acp_agent


async def stop_reason_of(
    home: Path, work: Path, replies: list[FakeReply], env: dict[str, str] | None = None
) -> str:
    """The ``stopReason`` of one prompt answered by ``replies``; every reply must be used."""
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, env=env) as agent:
            await agent.start()
            sid = await agent.new()
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("go")])
    assert server.remaining == 0 and server.unexpected_requests == []
    return str(response.stop_reason)


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [("length", "max_tokens"), ("content_filter", "refusal"), ("stop", "end_turn")],
)
async def test_the_models_finish_reason_reaches_the_client(
    home: Path, work: Path, finish_reason: str, stop_reason: str
) -> None:
    reply = FakeReply(text="Partial answer", finish_reason=finish_reason)
    assert await stop_reason_of(home, work, [reply]) == stop_reason


async def test_max_iterations_reaches_the_client_as_max_turn_requests(
    home: Path, work: Path
) -> None:
    calls = [FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": "."})]) for _ in range(2)]
    env = {"OPENHEIM_MAX_ITERATIONS": "2"}
    assert await stop_reason_of(home, work, calls, env) == "max_turn_requests"
