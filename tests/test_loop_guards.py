"""The agent loop's guards: identical repeated calls and pivot guidance after failures."""

from __future__ import annotations

from typing import Any

from openheim.events import (
    Notice,
)
from openheim.loop_guards import PIVOT_GUIDANCE
from openheim.messages import TextBlock, ToolResultBlock
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool
from tests.loop_support import echo, finished, make_agent, run


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
