"""The agent loop: model call, tool calls, repeat, as an async generator of events.

One run appends to the caller's history list and yields events until exactly one ``Finished``.

* At most ``max_iterations`` model calls; if the model still wants tools after the last one the
  run ends with ``max_turn_requests``.
* All tool calls of one reply are announced (``ToolCall``) before any runs. Each passes the
  approval gate in call order; consecutive read-only calls then run concurrently, a mutating call
  runs alone, in call order. Results go into history in call order.
* Unknown tools, malformed arguments, denials and tool failures become error results the model
  can read; they never end the run.
* With ``tool_rounds`` set, once that many rounds of tool calls have run, the next model call
  offers no tools (``tool_choice`` ``none``), so the model gives its answer from the results.
* The same call (name and arguments) three times in a row ends the run (``loop_detected``).
  Three rounds in a row whose calls all failed add pivot guidance for the model
  (``openheim.loop_guards``, which also clamps implausible usage).
* Usage and cost go to the agent's ``Meter``; a turn ends with a ``CostUpdate``, and a reached
  session budget stops the run before its next model call.
* Cancelling (the ``cancel`` event, or closing the generator) stops streaming or kills running
  tools, gives every unanswered call a "cancelled" result so the history stays valid, and ends
  with ``cancelled``.

How events travel from the run's task to the consumer is ``openheim.handover``; how a call is
bound to its tool and run is ``ToolSet.bind`` and ``BoundCall.run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path

from openheim.approval import AllowAll, ApprovalGate, ApprovalRequest, Deny, Resolver, decide
from openheim.errors import ProviderProtocolError
from openheim.events import (
    CostUpdate,
    Event,
    Finished,
    IterationStart,
    Notice,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolStatus,
    UsageUpdate,
)
from openheim.handover import Closing, Handover
from openheim.loop_guards import BUDGET_STOP, REPEATED_CALL_RESULT, RoundGuard, checked_usage
from openheim.messages import (
    FinishReason,
    Message,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    tool_results_message,
)
from openheim.process.child_env import child_env
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ToolChoice,
    closing_stream,
)
from openheim.redaction.secrets import redact
from openheim.tools.base import BoundCall, ToolContext, ToolOutput, ToolSet, run_batched
from openheim.tools.sandbox import PathSandbox
from openheim.usage import Meter

CANCELLED_RESULT = "cancelled: the user stopped the run before this tool call finished"

_FINISH_TO_STOP: dict[FinishReason, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "repetition": "max_tokens",
}


def _default_context() -> ToolContext:
    cwd = Path.cwd()
    return ToolContext(PathSandbox(cwd), cwd, child_env())


@dataclass
class Agent:
    """What a run needs: a provider and model, tools, the gate and the limits."""

    provider: Provider
    model: str
    tools: ToolSet = field(default_factory=ToolSet)
    system: str | None = None
    gate: ApprovalGate = field(default_factory=AllowAll)
    resolver: Resolver | None = None
    context: ToolContext = field(default_factory=_default_context)
    max_iterations: int = 10
    tool_choice: ToolChoice = "auto"
    """A forced choice (``required``, a named tool) applies to the first model call of a run;
    later calls are ``auto``, or the model could never give its answer."""
    max_tokens: int | None = None
    tool_rounds: int | None = None
    """Rounds of tool calls after which the model must answer (None: no limit)."""
    meter: Meter = field(default_factory=Meter)
    """Usage and cost across every run of this agent, with the session's budget caps."""

    def run(
        self,
        history: list[Message],
        *,
        cancel: asyncio.Event | None = None,
        settled: asyncio.Event | None = None,
        handover: Handover | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run on ``history`` (which must end with the user's message); see ``run_agent``."""
        return run_agent(self, history, cancel=cancel, settled=settled, handover=handover)


def run_agent(
    agent: Agent,
    history: list[Message],
    *,
    cancel: asyncio.Event | None = None,
    settled: asyncio.Event | None = None,
    handover: Handover | None = None,
) -> AsyncGenerator[Event, None]:
    """Yield the events of one run; the last one is ``Finished``. Provider errors propagate.

    The run works in its own task and hands each event over as a rendezvous (see
    ``openheim.handover``; pass ``handover`` to set its ``tap``); ``settled`` is set once the
    history is final."""
    handover = handover if handover is not None else Handover()
    run = _Run(agent, history, handover)
    return handover.run(run.work, run.repair, cancel=cancel, settled=settled)


class _Run:
    """One run's state: what it has used, what it still owes the history, its guards."""

    def __init__(self, agent: Agent, history: list[Message], handover: Handover) -> None:
        self.agent = agent
        self.history = history
        self.emit = handover.emit
        self.usage = Usage()
        self.turn_cost: float | None = None
        self.denied = 0
        self.guard = RoundGuard()
        self.rounds = 0
        self.partial: list[str] = []
        self.pending: tuple[ToolUseBlock, ...] = ()
        self.results: dict[str, ToolResultBlock] = {}

    async def work(self) -> Closing:
        """Run to the end; the closing events: the turn's cost, then ``Finished``."""
        return self._closing(await self._iterate())

    async def repair(self) -> Closing:
        """After a cancel, leave a valid history behind: keep streamed text, answer every
        pending call; the closing events as for ``work``."""
        if self.partial:
            self.history.append(Message.assistant("".join(self.partial)))
            self.partial = []
        if self.pending:
            for call in self.pending:
                if call.id not in self.results:
                    await self._record(call, ToolOutput.failure(CANCELLED_RESULT), "cancelled")
            self.history.append(tool_results_message(self.results[c.id] for c in self.pending))
            self.pending, self.results = (), {}
        return self._closing(self._finish("cancelled", "user_cancelled"))

    def _closing(self, finished: Finished) -> Closing:
        meter = self.agent.meter
        return (CostUpdate(self.turn_cost, meter.cost, meter.usage), finished)

    def _finish(self, stop: StopReason, reason: str | None = None, text: str = "") -> Finished:
        return Finished(stop, reason, self.usage, text, self.denied)

    async def _iterate(self) -> Finished:
        agent = self.agent
        for iteration in range(1, agent.max_iterations + 1):
            if (budget := agent.meter.exceeded()) is not None:
                reason, message = budget
                await self.emit(Notice(f"stopped: {message}", "warning"))
                return self._finish(BUDGET_STOP[reason], reason)
            await self.emit(IterationStart(iteration))
            response = await self._call_model(first=iteration == 1)
            self.history.append(response.message)
            calls = response.message.tool_uses
            if response.finish == "pause_turn" and not calls:
                continue
            if not calls:
                stop = _FINISH_TO_STOP[response.finish]
                return self._finish(stop, response.raw_finish, response.message.text)
            if (stopped := await self._run_tools(calls)) is not None:
                return stopped
        return self._finish("max_turn_requests", "max_iterations")

    async def _call_model(self, *, first: bool) -> ModelResponse:
        agent = self.agent
        choice = agent.tool_choice if first or agent.tool_choice == "none" else "auto"
        if not len(agent.tools) or self.rounds >= (agent.tool_rounds or self.rounds + 1):
            choice = "none"
        request = ModelRequest(
            model=agent.model,
            messages=tuple(self.history),
            system=agent.system,
            tools=agent.tools.specs,
            tool_choice=choice,
            max_tokens=agent.max_tokens,
        )
        self.partial = []
        response: ModelResponse | None = None
        async with closing_stream(agent.provider.stream(request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    if isinstance(item, TextDelta):
                        self.partial.append(item.text)
                    await self.emit(item)
        self.partial = []
        if response is None:
            raise ProviderProtocolError(
                f"provider {agent.provider.name!r} ended its stream without a response",
                hint="the provider implementation is broken; report it",
            )
        usage, odd = checked_usage(agent.provider.name, response.usage)
        if odd is not None:
            await self.emit(odd)
        self.usage += usage
        call_cost = agent.meter.record(response.model or agent.model, usage)
        if call_cost is not None:
            self.turn_cost = (self.turn_cost or 0.0) + call_cost
        await self.emit(UsageUpdate(usage, self.usage))
        return response

    async def _run_tools(self, calls: tuple[ToolUseBlock, ...]) -> Finished | None:
        tools = self.agent.tools
        self.pending, self.results = calls, {}
        for call in calls:
            kind = tools.kind_of(call.name).value
            await self.emit(ToolCall(call.id, call.name, call.arguments, kind))
        if self.guard.repeated(calls):
            for call in calls:
                await self._record(call, ToolOutput.failure(REPEATED_CALL_RESULT))
            await self._append_results()
            return self._finish("max_turn_requests", "loop_detected")
        runnable = [r for call in calls if (r := await self._prepare(call)) is not None]
        self.rounds += 1
        await run_batched(runnable, self._execute)
        await self._append_results()
        return None

    async def _prepare(self, call: ToolUseBlock) -> BoundCall | None:
        """Bind and approve one call; record an error result and return None if it fails."""
        bound = self.agent.tools.bind(call)
        if isinstance(bound, ToolOutput):
            await self._record(call, bound)
            return None
        caps, cwd = bound.tool.capabilities, str(self.agent.context.cwd)
        request = ApprovalRequest(
            call.id, call.name, call.arguments, caps.read_only, caps.kind, cwd
        )
        verdict = await decide(self.agent.gate, request, self.agent.resolver)
        if isinstance(verdict, Deny):
            self.denied += 1
            await self._record(call, ToolOutput.failure(f"denied: {verdict.reason}"), "denied")
            return None
        return bound

    async def _execute(self, bound: BoundCall) -> None:
        await self._record(bound.call, await bound.run(self.agent.context))

    async def _record(
        self, call: ToolUseBlock, output: ToolOutput, status: ToolStatus | None = None
    ) -> None:
        """Keep the call's result and announce it; the status follows ``is_error`` unless
        given (``denied``, ``cancelled``)."""
        status = status or ("failed" if output.is_error else "completed")
        content = redact(output.content)  # secrets never reach the model, history or events
        is_error = status != "completed"
        self.results[call.id] = ToolResultBlock(call.id, content, is_error, output.images)
        await self.emit(ToolResult(call.id, call.name, content, is_error, status, output.diff))

    async def _append_results(self) -> None:
        ordered = [self.results[c.id] for c in self.pending]
        extra: list[TextBlock] = []
        if (guidance := self.guard.pivot(ordered)) is not None:
            extra.append(TextBlock(guidance))
            await self.emit(Notice("added pivot guidance after repeated tool failures", "warning"))
        self.history.append(tool_results_message(ordered, *extra))
        self.pending, self.results = (), {}
