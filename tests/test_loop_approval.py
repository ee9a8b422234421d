"""The agent loop behind an approval gate: allow, deny, ask, resolvers and learned answers."""

from __future__ import annotations

import pytest

from openheim.approval import Allow, AllowAll, ApprovalRequest, Ask, Deny, DenyAll, Verdict
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from tests.loop_support import echo, finished, make_agent, results, run


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
