"""``delegate_task``: the model hands a self-contained task to a subagent and gets its answer.

The tool only decides *what* runs (which persona, which tools, which model, how many steps);
*how* a subagent is started (resolving a provider, opening a child session) is the runtime's
``Spawn``. ``run_subagent`` is the generic part of a spawn: it builds the child ``Agent`` from the
parent's and runs it to the end.

The tool is read-only in the loop's terms, so several delegations of one reply run concurrently
(at most ``max_parallel`` at a time); each subagent's own tool calls pass the parent's approval
gate, with prompts labelled by the subagent's name. A subagent never gets ``delegate_task``, so
delegation cannot recurse, and it shares the parent's sandbox and meter, so it can neither leave
the work dir nor escape the session's budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Protocol

from openheim.agents.profiles import AgentProfile
from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Resolver
from openheim.errors import ToolError
from openheim.events import Finished
from openheim.loop import Agent
from openheim.messages import Message, StopReason
from openheim.providers.base import Provider
from openheim.tools.base import Capabilities, Tool, ToolContext, ToolKind, ToolOutput, ToolSet

log = logging.getLogger(__name__)

DELEGATE_TASK = "delegate_task"
INLINE_NAME = "inline"

_STOP_EXPLANATIONS: dict[StopReason, str] = {
    "max_turn_requests": "it ran out of steps before finishing",
    "max_tokens": "its answer was cut off at the output token limit",
    "refusal": "the model refused the task",
    "cancelled": "it was cancelled",
}


@dataclass(frozen=True)
class SubagentRequest:
    """One delegation, resolved against its profile: what the runtime's ``Spawn`` must start."""

    name: str
    """The profile's name, or ``inline`` for a one-off persona."""
    system_prompt: str
    task: str
    tools_patterns: tuple[str, ...] | None
    """The profile's allow-list (None: every tool of the parent, except ``delegate_task``)."""
    model: str | None
    """None: the parent's model."""
    provider: str | None
    """None: the parent's provider (or, with ``model`` set, the runtime's default resolution)."""
    max_iterations: int | None
    """None: the parent's cap."""
    narrow_patterns: tuple[str, ...] | None = None
    """The call's own ``tools`` argument, applied after ``tools_patterns`` (it only narrows)."""
    capped_by_parent: bool = False
    """The cap came from the model (inline, or a profile without its own cap): it may not exceed
    the parent's."""


@dataclass(frozen=True)
class SubagentResult:
    """How the subagent's run ended and its final text."""

    text: str
    stop_reason: StopReason
    reason: str | None = None


class Spawn(Protocol):
    """Start a subagent for ``request`` and run it to the end (implemented by the runtime)."""

    async def __call__(self, request: SubagentRequest) -> SubagentResult: ...


@dataclass(frozen=True)
class DelegateArgs:
    task: Annotated[
        str,
        "A complete, self-contained brief: the goal, every fact, path and constraint the "
        "subagent needs, and what its answer should contain. It sees nothing else.",
    ]
    agent: Annotated[str | None, "The subagent's name, exactly as listed"] = None
    tools: Annotated[
        list[str] | None,
        "Narrow the subagent's tools further to these names or fnmatch patterns",
    ] = None
    model: Annotated[str | None, "Run the subagent on this model instead"] = None
    max_iterations: Annotated[int | None, "At most this many model calls for the subagent"] = None


@dataclass(frozen=True)
class InlineDelegateArgs(DelegateArgs):
    system_prompt: Annotated[
        str | None, "Instead of agent: the persona (system prompt) of a one-off subagent"
    ] = None


class DelegateTool(Tool):
    """``delegate_task`` over ``profiles``; see the module docstring."""

    name = DELEGATE_TASK
    capabilities = Capabilities(read_only=True, kind=ToolKind.THINK)

    def __init__(
        self,
        profiles: Mapping[str, AgentProfile],
        spawn: Spawn,
        *,
        max_parallel: int = 4,
        allow_inline: bool = False,
    ) -> None:
        if max_parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, got {max_parallel}")
        self.profiles = dict(profiles)
        self.spawn = spawn
        self.allow_inline = allow_inline
        self.args_model = InlineDelegateArgs if allow_inline else DelegateArgs
        self.description = _describe(self.profiles, max_parallel, allow_inline)
        self._slots = asyncio.Semaphore(max_parallel)

    async def call(self, args: DelegateArgs, ctx: ToolContext) -> ToolOutput:
        request = self.request(args)
        async with self._slots:
            try:
                result = await self.spawn(request)
            except Exception as err:
                log.warning("subagent %s failed", request.name, exc_info=True)
                return ToolOutput(
                    f"subagent {request.name!r} failed: {type(err).__name__}: {err}",
                    is_error=True,
                )
        return _output(request.name, result)

    def request(self, args: DelegateArgs) -> SubagentRequest:
        """The delegation ``args`` asks for (raises ToolError for a bad choice of subagent)."""
        inline = getattr(args, "system_prompt", None)
        if args.max_iterations is not None and args.max_iterations < 1:
            raise ToolError("max_iterations must be at least 1", hint="omit it to use the default")
        narrow = tuple(args.tools) if args.tools is not None else None
        if inline is not None:
            if args.agent is not None:
                raise ToolError("pass either agent or system_prompt, not both")
            return SubagentRequest(
                INLINE_NAME,
                inline,
                args.task,
                None,
                args.model,
                None,
                args.max_iterations,
                narrow,
                capped_by_parent=True,
            )
        profile = self._profile(args.agent)
        cap = profile.max_iterations
        if args.max_iterations is not None:
            cap = args.max_iterations if cap is None else min(cap, args.max_iterations)
        return SubagentRequest(
            profile.name,
            profile.system_prompt,
            args.task,
            profile.tools,
            args.model or profile.model,
            profile.provider,
            cap,
            narrow,
            capped_by_parent=profile.max_iterations is None,
        )

    def _profile(self, name: str | None) -> AgentProfile:
        listed = ", ".join(sorted(self.profiles)) or "none"
        if name is None:
            also = " or system_prompt" if self.allow_inline else ""
            raise ToolError(f"pass agent{also}", hint=f"available subagents: {listed}")
        profile = self.profiles.get(name)
        if profile is None:
            raise ToolError(
                f"unknown subagent {name!r}", hint=f"use one of the available subagents: {listed}"
            )
        return profile


def delegate_tool(
    profiles: Mapping[str, AgentProfile],
    spawn: Spawn,
    *,
    max_parallel: int = 4,
    allow_inline: bool = False,
) -> Tool | None:
    """The ``delegate_task`` tool, or None when there is nothing to delegate to."""
    if not profiles and not allow_inline:
        return None
    return DelegateTool(profiles, spawn, max_parallel=max_parallel, allow_inline=allow_inline)


def _describe(profiles: Mapping[str, AgentProfile], max_parallel: int, inline: bool) -> str:
    """The tool description: how to brief a subagent, and every profile with its description."""
    lines = [
        "Delegate a task to a subagent: a separate agent with its own instructions, model and "
        "tools, which works on its own and returns only its final answer. The subagent sees "
        "nothing of this conversation, only `task`, so write a complete, self-contained brief: "
        "the goal, all relevant facts, file paths and constraints, and what the answer must "
        f"contain. Several delegate_task calls in one reply run in parallel (up to {max_parallel} "
        "at a time)."
    ]
    if inline:
        lines.append(
            "Pass `agent` to use a listed subagent, or `system_prompt` instead to run a one-off "
            "subagent with that persona."
        )
    if profiles:
        lines.append("Available subagents (pass the name as `agent`):")
        for name in sorted(profiles):
            description = profiles[name].description
            lines.append(f"- {name}: {description}" if description else f"- {name}")
    return "\n".join(lines)


def _output(name: str, result: SubagentResult) -> ToolOutput:
    """The subagent's answer; an abnormal stop is an error result that says what happened."""
    explanation = _STOP_EXPLANATIONS.get(result.stop_reason)
    if explanation is None:
        return ToolOutput(result.text)
    detail = f" ({result.reason})" if result.reason else ""
    text = f"subagent {name!r} did not finish: {explanation}{detail}."
    if result.text:
        text += f"\nIts last text:\n{result.text}"
    return ToolOutput(text, is_error=True)


async def run_subagent(
    parent: Agent,
    request: SubagentRequest,
    *,
    provider: Provider,
    model: str,
    history: list[Message],
    max_tokens: int | None = None,
) -> SubagentResult:
    """Build the child agent of ``parent`` for ``request`` and run it on ``history`` to the end.

    ``history`` must be empty (a ``PersistentHistory`` records a stored child session); the task
    becomes its only user message. Cancelling this coroutine stops the child's run.
    """
    if history:
        raise ValueError("a subagent starts from an empty history")
    child = child_agent(parent, request, provider=provider, model=model, max_tokens=max_tokens)
    history.append(Message.user(request.task))
    finished: Finished | None = None
    # Close the run with us, so that a cancelled delegation stops the child's tools at once.
    async with contextlib.aclosing(child.run(history)) as events:
        async for event in events:
            if isinstance(event, Finished):
                finished = event
    if finished is None:  # the loop always ends with Finished; guard the contract anyway
        raise RuntimeError(f"subagent {request.name!r} ended without a Finished event")
    text = finished.text or _last_assistant_text(history)
    return SubagentResult(text, finished.stop_reason, finished.reason)


def child_agent(
    parent: Agent,
    request: SubagentRequest,
    *,
    provider: Provider,
    model: str,
    max_tokens: int | None = None,
) -> Agent:
    """The subagent: the parent's sandbox, gate and meter; its own persona, tools and cap."""
    cap = request.max_iterations or parent.max_iterations
    if request.capped_by_parent:
        cap = min(cap, parent.max_iterations)
    return Agent(
        provider=provider,
        model=model,
        tools=child_tools(parent.tools, request),
        system=request.system_prompt or None,
        gate=parent.gate,
        resolver=labelled_resolver(parent.resolver, request.name),
        context=parent.context,
        max_iterations=cap,
        max_tokens=max_tokens,
        meter=parent.meter,
    )


def child_tools(tools: ToolSet, request: SubagentRequest) -> ToolSet:
    """The parent's tools narrowed by the profile's and the call's patterns, never delegation."""
    for patterns in (request.tools_patterns, request.narrow_patterns):
        if patterns is not None:
            tools = tools.select(patterns)
    return ToolSet(t for t in tools if t.name != DELEGATE_TASK)


def labelled_resolver(resolver: Resolver | None, name: str) -> Resolver | None:
    """``resolver`` with every prompt starting ``[subagent NAME]``, so the user knows who asks."""
    if resolver is None:
        return None
    inner = resolver

    async def resolve(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        prompt = f"[subagent {name}] {ask.prompt}".rstrip()
        return await inner(request, dataclasses.replace(ask, prompt=prompt))

    return resolve


def _last_assistant_text(history: list[Message]) -> str:
    for message in reversed(history):
        if message.role == "assistant" and message.text:
            return message.text
    return ""
