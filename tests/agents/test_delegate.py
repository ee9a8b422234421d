"""delegate_task and run_subagent on scripted providers: routing, tools, caps, concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openheim.agents import (
    DELEGATE_TASK,
    AgentProfile,
    DelegateTool,
    ProfileSource,
    SubagentRequest,
    SubagentResult,
    child_agent,
    delegate_tool,
    run_subagent,
)
from openheim.approval import Allow, AllowAll, ApprovalGate, ApprovalRequest, Ask, Verdict
from openheim.events import Finished
from openheim.loop import CANCELLED_RESULT, Agent
from openheim.messages import Message, ToolResultBlock
from openheim.providers.base import ModelRequest
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import Tool, ToolKind, ToolSet
from openheim.tools.decorator import tool
from tests.helpers import collect


@tool(read_only=True, kind=ToolKind.READ)
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool(read_only=True, kind=ToolKind.READ)
def read_dir(path: str) -> str:
    """List a folder."""
    return "a.txt"


@tool(kind=ToolKind.EDIT)
def write_file(path: str, text: str) -> str:
    """Write a file."""
    return "written"


TOOLS: tuple[Tool, ...] = (read_file, read_dir, write_file)


def profile(name: str, **fields: Any) -> AgentProfile:
    values: dict[str, Any] = {
        "description": f"the {name}",
        "model": None,
        "provider": None,
        "tools": None,
        "max_iterations": None,
        "system_prompt": f"You are the {name}.",
        "path": Path(f"/agents/{name}.md"),
        "source": ProfileSource.USER,
    }
    values.update(fields)
    return AgentProfile(name=name, **values)


@dataclass
class Fleet:
    """A ``Spawn`` on ``run_subagent`` routing by model to scripted providers; counts runs."""

    providers: dict[str, ScriptedProvider]
    parent: Agent | None = None
    requests: list[SubagentRequest] = field(default_factory=list)
    histories: list[list[Message]] = field(default_factory=list)
    active: int = 0
    peak: int = 0

    async def __call__(self, request: SubagentRequest) -> SubagentResult:
        assert self.parent is not None
        self.requests.append(request)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            model = request.model or self.parent.model
            history: list[Message] = []
            self.histories.append(history)
            provider = self.providers[model]
            return await run_subagent(
                self.parent, request, provider=provider, model=model, history=history
            )
        finally:
            self.active -= 1


def setup(
    profiles: Sequence[AgentProfile],
    parent_steps: Sequence[Any],
    children: dict[str, ScriptedProvider] | None = None,
    *,
    gate: ApprovalGate | None = None,
    resolver: Any = None,
    max_parallel: int = 4,
    allow_inline: bool = False,
    max_iterations: int = 10,
) -> tuple[Agent, Fleet]:
    parent_provider = ScriptedProvider(parent_steps)
    fleet = Fleet({"big": parent_provider, **(children or {})})
    delegate = delegate_tool(
        {p.name: p for p in profiles}, fleet, max_parallel=max_parallel, allow_inline=allow_inline
    )
    assert delegate is not None
    parent = Agent(
        provider=parent_provider,
        model="big",
        tools=ToolSet([*TOOLS, delegate]),
        gate=gate or AllowAll(),
        resolver=resolver,
        max_iterations=max_iterations,
    )
    fleet.parent = parent
    return parent, fleet


def delegate(agent: str | None = None, task: str = "do it", **more: Any) -> Reply:
    args: dict[str, Any] = {"task": task, **more}
    if agent is not None:
        args["agent"] = agent
    return Reply(tool_calls=[tool_call(DELEGATE_TASK, args)])


def delegations(n: int, agent: str) -> Reply:
    calls = [tool_call(DELEGATE_TASK, {"agent": agent, "task": f"task {i}"}) for i in range(n)]
    return Reply(tool_calls=calls)


async def run(parent: Agent, prompt: str = "go") -> tuple[list[Message], Finished]:
    history = [Message.user(prompt)]
    events = await collect(parent.run(history))
    last = events[-1]
    assert isinstance(last, Finished)
    return history, last


def results(history: list[Message]) -> list[ToolResultBlock]:
    return [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]


def tool_names(request: ModelRequest) -> list[str]:
    return [spec.name for spec in request.tools]


async def test_a_delegation_runs_on_the_profiles_model_and_returns_its_answer() -> None:
    small = ScriptedProvider(["LGTM: no issues"])
    reviewer = profile("reviewer", model="small")
    parent, _ = setup(
        [reviewer], [delegate("reviewer", "Review a.py"), "relayed"], {"small": small}
    )
    history, finished = await run(parent)
    assert finished.text == "relayed"
    [request] = small.requests
    assert request.model == "small"
    assert request.system == "You are the reviewer."
    assert request.messages == (Message.user("Review a.py"),)
    [result] = results(history)
    assert (result.content, result.is_error) == ("LGTM: no issues", False)


async def test_the_allow_list_and_the_calls_patterns_narrow_the_tools() -> None:
    small = ScriptedProvider(["one", "two", "three"])
    profiles = [
        profile("reader", model="small", tools=("read_*", "delegate_*")),
        profile("any", model="small"),
    ]
    steps = [delegate("reader"), delegate("reader", tools=["*_dir"]), delegate("any"), "done"]
    parent, _ = setup(profiles, steps, {"small": small})
    await run(parent)
    assert [tool_names(r) for r in small.requests] == [
        ["read_file", "read_dir"],
        ["read_dir"],
        ["read_file", "read_dir", "write_file"],
    ]


def test_the_iteration_cap_is_inherited_overridden_and_capped_for_the_model() -> None:
    tool_ = DelegateTool(
        {"p": profile("p"), "q": profile("q", max_iterations=7)}, _unused_spawn, allow_inline=True
    )
    parent = Agent(provider=ScriptedProvider(), model="big", max_iterations=3)

    def cap(**args: Any) -> int:
        request = tool_.request(tool_.parse({"task": "t", **args}))
        return child_agent(parent, request, provider=parent.provider, model="m").max_iterations

    assert cap(agent="p") == 3  # inherited
    assert cap(agent="q") == 7  # the profile's own cap, set by the user
    assert cap(agent="q", max_iterations=5) == 5  # the model may lower it
    assert cap(agent="q", max_iterations=9) == 7  # but not raise it
    assert cap(agent="p", max_iterations=9) == 3  # nor exceed the parent's
    assert cap(system_prompt="inline", max_iterations=9) == 3
    assert cap(system_prompt="inline", max_iterations=2) == 2


async def _unused_spawn(request: SubagentRequest) -> SubagentResult:
    raise AssertionError("not spawned in this test")


async def test_a_subagent_out_of_steps_is_an_error_result_saying_so() -> None:
    small = ScriptedProvider([Reply("looking", tool_calls=[tool_call("read_file", {"path": "x"})])])
    tight = profile("tight", model="small", max_iterations=1)
    parent, _ = setup([tight], [delegate("tight"), "ok"], {"small": small})
    history, _ = await run(parent)
    [result] = results(history)[-1:]
    assert result.is_error
    assert "did not finish: it ran out of steps" in result.content
    assert "looking" in result.content


async def test_an_inline_subagent_uses_the_given_persona_on_the_parents_model() -> None:
    parent, fleet = setup(
        [], [delegate(system_prompt="You are a poet.", task="a haiku")], allow_inline=True
    )
    fleet.providers["big"].add("five seven five", "relayed")
    _, finished = await run(parent)
    assert finished.text == "relayed"
    child_request = fleet.providers["big"].requests[1]
    assert child_request.system == "You are a poet."
    assert DELEGATE_TASK not in tool_names(child_request)


async def test_two_delegations_of_one_reply_run_concurrently() -> None:
    barrier = asyncio.Barrier(2)

    async def meet(request: ModelRequest) -> str:
        await asyncio.wait_for(barrier.wait(), 10)  # fails, not hangs, if run one by one
        return "met"

    small = ScriptedProvider([meet, meet])
    parent, _ = setup([profile("r", model="small")], [delegations(2, "r"), "ok"], {"small": small})
    history, _ = await run(parent)
    assert [r.content for r in results(history)] == ["met", "met"]


async def test_at_most_max_parallel_subagents_run_at_once() -> None:
    barrier = asyncio.Barrier(4)

    async def meet(request: ModelRequest) -> str:
        await asyncio.wait_for(barrier.wait(), 10)  # the first four must all be running
        return "met"

    small = ScriptedProvider([meet, meet, meet, meet, "last"])
    steps = [delegations(5, "r"), "ok"]
    parent, fleet = setup([profile("r", model="small")], steps, {"small": small}, max_parallel=4)
    history, _ = await run(parent)
    assert fleet.peak == 4
    assert sorted(r.content for r in results(history)) == ["last", "met", "met", "met", "met"]


async def test_cancelling_the_parent_stops_running_subagents() -> None:
    cancel = asyncio.Event()
    closed = asyncio.Event()

    async def hang(request: ModelRequest) -> str:
        cancel.set()
        try:
            await asyncio.Event().wait()
        finally:
            closed.set()
        raise AssertionError("unreachable")

    small = ScriptedProvider([hang])
    parent, fleet = setup([profile("r", model="small")], [delegate("r")], {"small": small})
    history = [Message.user("go")]
    events = await collect(parent.run(history, cancel=cancel))
    last = events[-1]
    assert isinstance(last, Finished)
    assert last.stop_reason == "cancelled"
    assert closed.is_set()
    assert fleet.active == 0
    assert [r.content for r in results(history)] == [CANCELLED_RESULT]


class AskForWrites:
    async def check(self, request: ApprovalRequest) -> Verdict:
        return Ask(f"allow {request.tool}?") if not request.read_only else Allow()


async def test_an_approval_prompt_names_the_subagent() -> None:
    prompts: list[str] = []

    async def resolver(request: ApprovalRequest, ask: Ask) -> Allow:
        prompts.append(ask.prompt)
        return Allow()

    write = Reply(tool_calls=[tool_call("write_file", {"path": "a", "text": "b"})])
    small = ScriptedProvider([write, "saved"])
    parent, _ = setup(
        [profile("writer", model="small")],
        [delegate("writer"), "ok"],
        {"small": small},
        gate=AskForWrites(),
        resolver=resolver,
    )
    history, _ = await run(parent)
    assert prompts == ["[subagent writer] allow write_file?"]
    assert results(history)[0].content == "saved"


async def test_an_unknown_subagent_and_a_failing_spawn_are_error_results() -> None:
    small = ScriptedProvider([RuntimeError("model exploded")])
    steps = [delegate("nobody"), delegate("r"), "ok"]
    parent, _ = setup([profile("r", model="small")], steps, {"small": small})
    history, _ = await run(parent)
    unknown, failed = results(history)
    assert unknown.is_error and "unknown subagent 'nobody'" in unknown.content
    assert "use one of the available subagents: r" in unknown.content
    assert failed.is_error and "model exploded" in failed.content


def test_the_description_lists_profiles_and_inline_adds_a_schema_field() -> None:
    profiles = {"b": profile("b"), "a": profile("a", description="")}
    plain = delegate_tool(profiles, _unused_spawn)
    assert plain is not None
    assert "self-contained brief" in plain.description
    assert plain.description.endswith("- a\n- b: the b")
    assert "system_prompt" not in plain.parameters["properties"]
    inline = delegate_tool({}, _unused_spawn, allow_inline=True)
    assert inline is not None
    assert "system_prompt" in inline.parameters["properties"]
    assert delegate_tool({}, _unused_spawn) is None


async def test_run_subagent_refuses_a_history_that_is_not_empty() -> None:
    parent = Agent(provider=ScriptedProvider(), model="big")
    request = SubagentRequest("r", "persona", "task", None, None, None, None)
    with pytest.raises(ValueError, match="empty history"):
        await run_subagent(
            parent, request, provider=parent.provider, model="big", history=[Message.user("x")]
        )
