"""The agent loop on the scripted provider: stop reasons, tool scheduling, tool errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openheim.errors import ProviderHTTPError, ToolError
from openheim.events import (
    CostUpdate,
    Finished,
    IterationStart,
    TextDelta,
    ToolCall,
    UsageUpdate,
)
from openheim.messages import Message, ToolResultBlock, ToolUseBlock, Usage
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool
from tests.loop_support import echo, finished, make_agent, results, run


async def test_plain_answer_ends_turn(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(chunks=["Hel", "lo"], usage=Usage(7, 3))])
    events, history = await run(make_agent(provider, ctx))
    assert [type(e) for e in events] == [
        IterationStart,
        TextDelta,
        TextDelta,
        UsageUpdate,
        CostUpdate,
        Finished,
    ]
    done = finished(events)
    assert (done.stop_reason, done.text, done.usage) == ("end_turn", "Hello", Usage(7, 3))
    assert history[-1] == Message.assistant("Hello")
    assert provider.requests[0].tool_choice == "none"
    provider.assert_done()


@pytest.mark.parametrize(("finish", "stop"), [("max_tokens", "max_tokens"), ("refusal", "refusal")])
async def test_abnormal_finishes_map_to_stop_reasons(
    ctx: ToolContext, finish: Any, stop: str
) -> None:
    provider = ScriptedProvider([Reply("cut", finish=finish)])
    events, _ = await run(make_agent(provider, ctx))
    assert finished(events).stop_reason == stop


async def test_max_iterations_ends_with_max_turn_requests(ctx: ToolContext) -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[tool_call("echo", {"text": str(i)})]) for i in range(3)]
    )
    events, history = await run(make_agent(provider, ctx, echo, max_iterations=3))
    done = finished(events)
    assert (done.stop_reason, done.reason) == ("max_turn_requests", "max_iterations")
    assert len(provider.requests) == 3
    assert isinstance(history[-1].content[0], ToolResultBlock)  # every call answered
    provider.assert_done()


async def test_tool_loop_feeds_results_back(ctx: ToolContext) -> None:
    call = tool_call("echo", {"text": "ping"})
    provider = ScriptedProvider([Reply(tool_calls=[call]), "done"])
    events, history = await run(make_agent(provider, ctx, echo))
    assert finished(events).stop_reason == "end_turn"
    second = provider.requests[1]
    answer = second.messages[-1].content[0]
    assert answer == ToolResultBlock(call.id, "echo: ping", False)
    assert [s.name for s in second.tools] == ["echo"]
    assert len(history) == 4


async def test_all_calls_announced_before_any_runs(ctx: ToolContext) -> None:
    order: list[str] = []

    @tool(read_only=False)
    def mark(n: int) -> str:
        order.append(f"run {n}")
        return "ok"

    calls = [tool_call("mark", {"n": i}) for i in range(3)]
    provider = ScriptedProvider([Reply(tool_calls=calls), "done"])
    agent = make_agent(provider, ctx, mark)
    async for event in agent.run([Message.user("go")]):
        if isinstance(event, ToolCall):
            order.append(f"call {event.arguments['n']}")
    assert order == ["call 0", "call 1", "call 2", "run 0", "run 1", "run 2"]


async def test_read_only_calls_overlap(ctx: ToolContext) -> None:
    both_started = asyncio.Barrier(2)

    @tool(read_only=True)
    async def wait_for_peer(name: str) -> str:
        await asyncio.wait_for(both_started.wait(), timeout=5)
        return name

    calls = [tool_call("wait_for_peer", {"name": n}) for n in ("a", "b")]
    provider = ScriptedProvider([Reply(tool_calls=calls), "done"])
    events, _ = await run(make_agent(provider, ctx, wait_for_peer))
    assert sorted(r.content for r in results(events)) == ["a", "b"]
    assert not any(r.is_error for r in results(events))


async def test_results_keep_call_order_when_completion_order_differs(ctx: ToolContext) -> None:
    first_may_finish = asyncio.Event()

    @tool(read_only=True)
    async def slow_then_fast(name: str) -> str:
        if name == "first":
            await asyncio.wait_for(first_may_finish.wait(), timeout=5)
        else:
            first_may_finish.set()
        return name

    calls = [tool_call("slow_then_fast", {"name": n}) for n in ("first", "second")]
    provider = ScriptedProvider([Reply(tool_calls=calls), "done"])
    events, history = await run(make_agent(provider, ctx, slow_then_fast))
    assert [r.content for r in results(events)] == ["second", "first"]  # completion order
    blocks = history[2].content
    assert [b.content for b in blocks if isinstance(b, ToolResultBlock)] == ["first", "second"]


async def test_mutating_calls_run_one_at_a_time_in_order(ctx: ToolContext) -> None:
    running: list[int] = []
    log: list[tuple[str, int]] = []

    @tool(read_only=False)
    async def mutate(n: int) -> str:
        running.append(n)
        log.append(("start", n))
        assert running == [n], f"overlap: {running}"
        await asyncio.sleep(0)  # yield so an overlapping call would get to run
        log.append(("end", n))
        running.remove(n)
        return "ok"

    calls = [tool_call("mutate", {"n": i}) for i in range(3)]
    provider = ScriptedProvider([Reply(tool_calls=calls), "done"])
    events, _ = await run(make_agent(provider, ctx, mutate))
    assert not any(r.is_error for r in results(events))
    assert log == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)]


async def test_bad_calls_become_error_results(ctx: ToolContext) -> None:
    calls = [
        tool_call("nope", {}),
        ToolUseBlock("bad_json", "echo", {}, raw_arguments="{not json"),
        tool_call("echo", {"text": 3}),
        tool_call("echo", {"text": "x", "extra": 1}),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls), "recovered"])
    events, history = await run(make_agent(provider, ctx, echo))
    got = results(events)
    assert all(r.is_error and r.status == "failed" for r in got)
    assert "unknown tool 'nope'" in got[0].content and "echo" in got[0].content
    assert "not a JSON object" in got[1].content
    assert "text" in got[2].content and "expected a string" in got[2].content
    assert "extra" in got[3].content and "unknown key" in got[3].content
    assert finished(events).text == "recovered"
    assert len(history[2].content) == 4


async def test_tool_exceptions_are_reported_not_raised(ctx: ToolContext) -> None:
    @tool
    def fails(kind: str) -> str:
        if kind == "tool":
            raise ToolError("disk is full", hint="free some space")
        raise RuntimeError("boom")

    calls = [tool_call("fails", {"kind": "tool"}), tool_call("fails", {"kind": "crash"})]
    provider = ScriptedProvider([Reply(tool_calls=calls), "ok"])
    events, _ = await run(make_agent(provider, ctx, fails))
    got = results(events)
    assert got[0].content == "disk is full (free some space)"
    assert "RuntimeError: boom" in got[1].content
    assert finished(events).stop_reason == "end_turn"


async def test_large_results_are_capped(ctx: ToolContext) -> None:
    @tool(read_only=True)
    def huge() -> str:
        return "line\n" * 100_000

    provider = ScriptedProvider([Reply(tool_calls=[tool_call("huge")]), "ok"])
    events, _ = await run(make_agent(provider, ctx, huge))
    content = results(events)[0].content
    assert len(content.encode()) < 129 * 1024
    assert "output truncated" in content


async def test_provider_errors_propagate(ctx: ToolContext) -> None:
    provider = ScriptedProvider([ProviderHTTPError("server exploded", status=500)])
    with pytest.raises(ProviderHTTPError, match="server exploded"):
        await run(make_agent(provider, ctx))


async def test_calls_the_provider_could_not_parse_get_its_error(ctx: ToolContext) -> None:
    broken = ToolUseBlock("e1", "read_file", {}, error="the action envelope is not valid JSON")
    provider = ScriptedProvider([Reply(tool_calls=[broken]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo))
    result = results(events)[0]
    assert (result.content, result.status) == ("the action envelope is not valid JSON", "failed")


async def test_forced_tool_choice_applies_to_the_first_call_only(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "done"])
    await run(make_agent(provider, ctx, echo, tool_choice="required"))
    assert [r.tool_choice for r in provider.requests] == ["required", "auto"]
