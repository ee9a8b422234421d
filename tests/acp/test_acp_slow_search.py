"""Searches over ACP: a pattern that used to hang the agent is answered at once; a search that
runs for many seconds ends within a second on ``session/cancel`` and the next prompt is
answered; closing stdin ends the agent within a second."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from acp.helpers import text_block

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests import slow_search
from tests.acp.harness import acp_agent

BOUND = 30.0
WITHIN = 1.0


async def test_a_pattern_that_used_to_hang_is_answered(home: Path, work: Path) -> None:
    (work / "line.txt").write_text("a" * 34 + "!\n")
    search = FakeReply(tool_calls=[FakeToolCall("search", {"pattern": "(a+)+$"})])
    with FakeLLMServer([search, "None found.", "Still here."]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            begun = time.monotonic()
            first = await asyncio.wait_for(
                agent.conn.prompt(session_id=sid, prompt=[text_block("find")]), BOUND
            )
            took = time.monotonic() - begun
            second = await asyncio.wait_for(
                agent.conn.prompt(session_id=sid, prompt=[text_block("again")]), BOUND
            )
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert took < 5.0
    result = server.requests[1].messages[-1]
    assert result["role"] == "tool" and "no matches for '(a+)+$'" in result["content"]


async def test_cancel_stops_a_running_search_and_the_next_prompt_is_answered(
    home: Path, work: Path
) -> None:
    slow_search.plant(work)
    with FakeLLMServer([slow_search.SEARCH, "Answered."]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            before = slow_search.bytes_read(agent.process.pid)
            turn = asyncio.create_task(
                agent.conn.prompt(session_id=sid, prompt=[text_block("find it")])
            )
            await slow_search.searching(agent.process.pid, before)
            begun = time.monotonic()
            await agent.conn.cancel(session_id=sid)
            first = await asyncio.wait_for(turn, BOUND)
            took = time.monotonic() - begun
            second = await asyncio.wait_for(
                agent.conn.prompt(session_id=sid, prompt=[text_block("again")]), BOUND
            )
    assert first.stop_reason == "cancelled"
    assert took < WITHIN
    assert second.stop_reason == "end_turn"
    assert len(server.requests) == 2
    done = agent.client.of_kind("tool_call_update")[0]
    assert done.status == "failed" and done.raw_output["status"] == "cancelled"
    assert agent.client.text() == "Answered."


async def test_closing_stdin_ends_the_agent_during_a_search(home: Path, work: Path) -> None:
    slow_search.plant(work)
    with FakeLLMServer([slow_search.SEARCH, "never"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            before = slow_search.bytes_read(agent.process.pid)
            turn = asyncio.create_task(
                agent.conn.prompt(session_id=sid, prompt=[text_block("find it")])
            )
            await slow_search.searching(agent.process.pid, before)
            begun = time.monotonic()
            assert agent.process.stdin is not None
            agent.process.stdin.close()
            code = await asyncio.wait_for(agent.process.wait(), BOUND)
            took = time.monotonic() - begun
            turn.cancel()
            with contextlib.suppress(BaseException):
                await turn
    assert code == 0
    assert took < WITHIN
    assert len(server.requests) == 1
