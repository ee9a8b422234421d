"""The agent loop's usage and cost events, and the token and cost budgets that stop it."""

from __future__ import annotations

import pytest

from openheim.events import (
    CostUpdate,
    Notice,
    UsageUpdate,
)
from openheim.messages import ToolResultBlock, Usage
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from openheim.usage import Meter, Price
from tests.loop_support import echo, finished, make_agent, run


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
