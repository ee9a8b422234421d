"""The agent loop on the scripted provider: stop reasons, tool scheduling, guards, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from openheim.approval import Allow, AllowAll, ApprovalRequest, Ask, Deny, DenyAll, Verdict
from openheim.errors import ProviderHTTPError, ToolError
from openheim.events import (
    CostUpdate,
    Event,
    Finished,
    IterationStart,
    Notice,
    TextDelta,
    ToolCall,
    ToolResult,
    UsageUpdate,
)
from openheim.loop import CANCELLED_RESULT, PIVOT_GUIDANCE, Agent
from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolKind, ToolSet
from openheim.tools.decorator import tool
from openheim.usage import Meter, Price
from tests.helpers import collect


def finished(events: list[Event]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    return last


def results(events: list[Event]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


@tool(read_only=True, kind=ToolKind.READ)
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


def make_agent(provider: ScriptedProvider, ctx: ToolContext, *tools: Any, **kw: Any) -> Agent:
    return Agent(provider, "test-model", tools=ToolSet(tools), context=ctx, **kw)


async def run(agent: Agent, prompt: str = "hi") -> tuple[list[Event], list[Message]]:
    history = [Message.user(prompt)]
    events = await collect(agent.run(history))
    return events, history


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


async def test_loop_guard_stops_identical_repeats(ctx: ToolContext) -> None:
    ran: list[str] = []

    @tool(read_only=True)
    def look(path: str) -> str:
        ran.append(path)
        return "same"

    same = [Reply(tool_calls=[tool_call("look", {"path": "a"})]) for _ in range(3)]
    provider = ScriptedProvider(same)
    events, history = await run(make_agent(provider, ctx, look))
    done = finished(events)
    assert (done.stop_reason, done.reason) == ("max_turn_requests", "loop_detected")
    assert ran == ["a", "a"]
    last = history[-1].content[0]
    assert isinstance(last, ToolResultBlock) and last.is_error


async def test_loop_guard_resets_on_a_different_call(ctx: ToolContext) -> None:
    args = ["a", "a", "b", "a", "a"]
    steps: list[Any] = [Reply(tool_calls=[tool_call("echo", {"text": t})]) for t in args]
    provider = ScriptedProvider([*steps, "done"])
    events, _ = await run(make_agent(provider, ctx, echo))
    assert finished(events).stop_reason == "end_turn"


async def test_pivot_guidance_after_three_failed_rounds(ctx: ToolContext) -> None:
    steps: list[Any] = [Reply(tool_calls=[tool_call("missing", {"n": i})]) for i in range(3)]
    provider = ScriptedProvider([*steps, "I will try something else"])
    events, _ = await run(make_agent(provider, ctx, echo))
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].level == "warning"
    third_answer = provider.requests[3].messages[-1]
    guidance = [b for b in third_answer.content if isinstance(b, TextBlock)]
    assert guidance and guidance[0].text == PIVOT_GUIDANCE.format(n=3)
    second_answer = provider.requests[2].messages[-1]
    assert not any(isinstance(b, TextBlock) for b in second_answer.content)


async def test_a_success_resets_the_failure_count(ctx: ToolContext) -> None:
    names = ["missing", "missing", "echo", "missing", "missing"]
    steps: list[Any] = [
        Reply(tool_calls=[tool_call(n, {"text": str(i)})]) for i, n in enumerate(names)
    ]
    provider = ScriptedProvider([*steps, "done"])
    events, _ = await run(make_agent(provider, ctx, echo))
    assert not any(isinstance(e, Notice) for e in events)


class Gate:
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.seen: list[ApprovalRequest] = []

    async def check(self, request: ApprovalRequest) -> Verdict:
        self.seen.append(request)
        return self.verdict


async def test_gate_allow_runs_the_tool(ctx: ToolContext) -> None:
    gate = Gate(Allow())
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo, gate=gate))
    assert results(events)[0].status == "completed"
    assert finished(events).denied == 0
    assert [r.tool for r in gate.seen] == ["echo"]


async def test_allow_all_gate(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo, gate=AllowAll()))
    assert results(events)[0].content == "echo: x"


async def test_gate_deny_reports_reason_to_model(ctx: ToolContext) -> None:
    gate = Gate(Deny("not on Fridays"))
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo, gate=gate))
    result = results(events)[0]
    assert (result.status, result.is_error) == ("denied", True)
    assert "not on Fridays" in result.content
    assert finished(events).denied == 1
    assert gate.seen[0].tool == "echo" and gate.seen[0].read_only
    assert gate.seen[0].kind == "read"


async def test_deny_all_gate(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo, gate=DenyAll("read-only session")))
    assert results(events)[0].content == "denied: read-only session"


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_gate_ask_is_resolved_by_the_driver(ctx: ToolContext, answer: str) -> None:
    asked: list[str] = []

    async def resolver(request: ApprovalRequest, verdict: Ask) -> Allow | Deny:
        asked.append(request.tool_call_id)
        return Deny("user said no") if answer == "deny" else Allow()

    call = tool_call("echo", {"text": "x"})
    provider = ScriptedProvider([Reply(tool_calls=[call]), "ok"])
    agent = make_agent(provider, ctx, echo, gate=Gate(Ask()), resolver=resolver)
    events, _ = await run(agent)
    assert asked == [call.id]
    status = results(events)[0].status
    assert status == ("completed" if answer == "allow" else "denied")


async def test_gate_ask_without_resolver_denies(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("echo", {"text": "x"})]), "ok"])
    events, _ = await run(make_agent(provider, ctx, echo, gate=Gate(Ask())))
    assert "no one to ask" in results(events)[0].content
    assert finished(events).denied == 1


async def test_cancel_during_streaming(ctx: ToolContext) -> None:
    release = asyncio.Event()

    async def stalls(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("partial ")
        await release.wait()  # never set: only cancellation gets past this
        yield ModelResponse(Message.assistant("never"), "end_turn")

    provider = ScriptedProvider([stalls])
    cancel = asyncio.Event()
    history = [Message.user("hi")]
    events: list[Event] = []
    async for event in make_agent(provider, ctx).run(history, cancel=cancel):
        events.append(event)
        if isinstance(event, TextDelta):
            cancel.set()
    done = finished(events)
    assert (done.stop_reason, done.reason) == ("cancelled", "user_cancelled")
    assert history[-1] == Message.assistant("partial ")


async def test_cancel_during_a_tool_answers_every_pending_call(ctx: ToolContext) -> None:
    cancel = asyncio.Event()
    saw_cancel: list[bool] = []

    @tool(read_only=False)
    async def hangs() -> str:
        cancel.set()  # the user cancels while this tool is running
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.append(True)
            raise
        return "never"

    calls = [
        tool_call("echo", {"text": "before"}),
        tool_call("hangs"),
        tool_call("echo", {"text": "-"}),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls)])
    history = [Message.user("hi")]
    agent = make_agent(provider, ctx, echo, hangs)
    events = await collect(agent.run(history, cancel=cancel))
    assert finished(events).stop_reason == "cancelled"
    assert saw_cancel == [True]
    answers = [b for b in history[-1].content if isinstance(b, ToolResultBlock)]
    assert [b.tool_use_id for b in answers] == [c.id for c in calls]
    assert [b.content for b in answers] == ["echo: before", CANCELLED_RESULT, CANCELLED_RESULT]
    statuses = [r.status for r in results(events)]
    assert statuses == ["completed", "cancelled", "cancelled"]


async def test_closing_the_stream_cancels_the_run(ctx: ToolContext) -> None:
    ran: list[str] = []

    @tool
    def record() -> str:
        ran.append("ran")
        return "ok"

    provider = ScriptedProvider([Reply(tool_calls=[tool_call("record")])])
    history = [Message.user("hi")]
    gen = make_agent(provider, ctx, record).run(history)
    async for event in gen:
        if isinstance(event, ToolCall):
            break  # the tool cannot start before this event has been handled
    await gen.aclose()
    assert ran == []
    last = history[-1].content[0]
    assert isinstance(last, ToolResultBlock) and last.content == CANCELLED_RESULT


async def test_a_cancel_while_the_closing_events_are_read_still_ends_with_finished(
    ctx: ToolContext,
) -> None:
    """The closing events carry no cancellation point: a cancel that arrives while the consumer
    handles the turn's cost cannot turn the end of the stream into a CancelledError."""
    cancel = asyncio.Event()
    events: list[Event] = []
    run = make_agent(ScriptedProvider(["done"]), ctx).run([Message.user("hi")], cancel=cancel)
    async for event in run:
        events.append(event)
        if isinstance(event, CostUpdate):
            cancel.set()
            for _ in range(5):  # let the cancel reach the run's task
                await asyncio.sleep(0)
    assert (finished(events).stop_reason, finished(events).text) == ("end_turn", "done")


async def test_provider_errors_propagate(ctx: ToolContext) -> None:
    provider = ScriptedProvider([ProviderHTTPError("server exploded", status=500)])
    with pytest.raises(ProviderHTTPError, match="server exploded"):
        await run(make_agent(provider, ctx))


async def test_usage_accumulates_across_iterations(ctx: ToolContext) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[tool_call("echo", {"text": "a"})], usage=Usage(10, 2, 4, 1)),
            Reply("done", usage=Usage(20, 3, 8, 0)),
        ]
    )
    events, _ = await run(make_agent(provider, ctx, echo))
    assert finished(events).usage == Usage(30, 5, 12, 1)
    updates = [e for e in events if isinstance(e, UsageUpdate)]
    assert [u.total for u in updates] == [Usage(10, 2, 4, 1), Usage(30, 5, 12, 1)]


async def test_turn_ends_with_its_cost(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply("a", usage=Usage(1_000_000, 0)), Reply("b")])
    agent = make_agent(provider, ctx, meter=Meter(prices={"test-model": Price(2.0, 8.0)}))
    await run(agent)
    events, _ = await run(agent)
    cost = next(e for e in events if isinstance(e, CostUpdate))
    assert cost.turn_cost == pytest.approx(10 * 2.0 / 1e6 + 5 * 8.0 / 1e6)
    assert cost.turn_cost is not None
    assert cost.session_cost == pytest.approx(2.0 + cost.turn_cost)
    assert cost.session_usage == Usage(1_000_010, 5)


async def test_unknown_price_means_no_cost(ctx: ToolContext) -> None:
    events, _ = await run(make_agent(ScriptedProvider(["a"]), ctx, meter=Meter(prices={})))
    cost = next(e for e in events if isinstance(e, CostUpdate))
    assert (cost.turn_cost, cost.session_cost) == (None, None)


@pytest.mark.parametrize(
    ("meter", "stop", "reason"),
    [
        (Meter(max_tokens=20), "max_tokens", "token_budget"),
        (
            Meter(prices={"test-model": Price(1e6, 1e6)}, max_cost=1.0),
            "max_turn_requests",
            "cost_budget",
        ),
    ],
)
async def test_budget_caps_stop_before_the_next_call(
    ctx: ToolContext, meter: Meter, stop: str, reason: str
) -> None:
    calls = [Reply(tool_calls=[tool_call("echo", {"text": str(i)})]) for i in range(3)]
    provider = ScriptedProvider(calls)
    events, history = await run(make_agent(provider, ctx, echo, meter=meter))
    done = finished(events)
    assert (done.stop_reason, done.reason) == (stop, reason)
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and "max_" in notices[-1].message
    assert isinstance(history[-1].content[0], ToolResultBlock)  # the history stays valid
    assert len(provider.requests) < 3


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


async def test_always_answers_are_learned_by_the_gate(ctx: ToolContext) -> None:
    class Learning(Gate):
        def __init__(self) -> None:
            super().__init__(Ask("ok?", ("a reason",)))
            self.learned: list[tuple[str, bool]] = []

        def learn(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
            self.learned.append((request.tool, isinstance(answer, Allow)))
            self.verdict = Allow()

    seen: list[tuple[str, ...]] = []

    async def resolver(request: ApprovalRequest, verdict: Ask) -> Allow | Deny:
        seen.append(verdict.reasons)
        return Allow(always=True)

    gate = Learning()
    calls = [Reply(tool_calls=[tool_call("echo", {"text": str(i)})]) for i in range(2)]
    provider = ScriptedProvider([*calls, "ok"])
    await run(make_agent(provider, ctx, echo, gate=gate, resolver=resolver))
    assert gate.learned == [("echo", True)]
    assert seen == [("a reason",)]  # asked once; the second call was allowed by the new rule
    assert gate.seen[0].cwd == str(ctx.cwd)
