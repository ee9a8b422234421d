"""``tool_rounds``: after that many rounds of tool calls the model must answer without tools."""

from __future__ import annotations

from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from tests.loop_support import echo, finished, make_agent, run


def calls(n: int) -> list[Reply]:
    return [Reply(tool_calls=[tool_call("echo", {"text": str(i)})]) for i in range(n)]


async def test_after_the_rounds_the_next_call_offers_no_tools(ctx: ToolContext) -> None:
    provider = ScriptedProvider([*calls(2), "the answer"])
    events, _ = await run(make_agent(provider, ctx, echo, tool_rounds=2))
    assert [r.tool_choice for r in provider.requests] == ["auto", "auto", "none"]
    done = finished(events)
    assert (done.stop_reason, done.text) == ("end_turn", "the answer")


async def test_without_a_limit_tools_stay_offered(ctx: ToolContext) -> None:
    provider = ScriptedProvider([*calls(3), "the answer"])
    await run(make_agent(provider, ctx, echo))
    assert [r.tool_choice for r in provider.requests] == ["auto"] * 4


async def test_rounds_count_per_run(ctx: ToolContext) -> None:
    provider = ScriptedProvider([*calls(1), "first", *calls(1), "second"])
    agent = make_agent(provider, ctx, echo, tool_rounds=1)
    await run(agent, "one")
    await run(agent, "two")
    assert [r.tool_choice for r in provider.requests] == ["auto", "none", "auto", "none"]
