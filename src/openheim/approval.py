"""The approval gate: every tool call passes it before it runs.

A gate answers ``Allow``, ``Deny(reason)`` (the reason is shown to the model) or ``Ask``. An
``Ask`` is settled by whoever drives the session (a terminal prompt, an ACP client, a callback)
through a ``Resolver``; with no resolver an ``Ask`` counts as a denial whose reason says why the
call needed a person and which rule would let it run. The core ships the allow-all and deny-all
gates; the policy engine is another gate behind the same interface.

A gate may also have ``learn(request, answer)`` (called for "always" / "never" answers) and
``answered(request, answer)`` (called for every answer a resolver gave), to remember decisions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call awaiting approval."""

    tool_call_id: str
    tool: str
    arguments: Mapping[str, Any]
    read_only: bool
    kind: str
    cwd: str = ""
    """The session's working directory, against which relative paths in arguments resolve."""
    reasons: tuple[str, ...] = ()
    """Why the call needs a person's decision (risks found), once the gate has asked."""


@dataclass(frozen=True, slots=True)
class Allow:
    always: bool = False
    """From a resolver: the user said "always", so the gate should stop asking for such calls."""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str = "the user denied this tool call"
    always: bool = False
    """From a resolver: the user said "never", so the gate should refuse such calls."""


@dataclass(frozen=True, slots=True)
class Ask:
    prompt: str = ""
    reasons: tuple[str, ...] = ()
    """Why the call needs a person's decision (risks found), shown to whoever answers."""
    rules: tuple[str, ...] = ()
    """Allow rules that together would let this exact call run without asking; empty when no
    rule can (a risk was found)."""
    auto_allows: bool = False
    """Whether ``approval = "auto"`` would run the call: only the mode made the gate ask."""
    mode: str = "ask"
    """The approval mode that asked, when only the mode did (``auto_allows``): ask or edits."""
    detail: str = ""
    """More for whoever answers (such as the diff a staged change writes); not part of a
    refusal."""


Verdict: TypeAlias = Allow | Deny | Ask
Resolver: TypeAlias = Callable[[ApprovalRequest, Ask], Awaitable[Allow | Deny]]
"""Settles an ``Ask``: a terminal prompt, an ACP permission request, a callback."""


class ApprovalGate(Protocol):
    async def check(self, request: ApprovalRequest) -> Verdict: ...


@runtime_checkable
class LearningGate(ApprovalGate, Protocol):
    """A gate that turns "always" / "never" answers into rules; ``decide`` tells it each such
    answer."""

    def learn(self, request: ApprovalRequest, answer: Allow | Deny) -> None: ...


@runtime_checkable
class AnswerObserver(ApprovalGate, Protocol):
    """A gate that wants to know every answer a person gave to its questions (the staging gate
    records an allowed preview); ``decide`` tells it each one."""

    def answered(self, request: ApprovalRequest, answer: Allow | Deny) -> None: ...


class AllowAll:
    """Approves every call."""

    async def check(self, request: ApprovalRequest) -> Verdict:
        return Allow()


class DenyAll:
    """Refuses every call, with a reason the model can act on."""

    def __init__(self, reason: str = "tool calls are disabled in this session") -> None:
        self.reason = reason

    async def check(self, request: ApprovalRequest) -> Verdict:
        return Deny(self.reason)


async def decide(
    gate: ApprovalGate, request: ApprovalRequest, resolver: Resolver | None
) -> Allow | Deny:
    """The gate's final answer, asking the resolver when the gate says Ask."""
    verdict = await gate.check(request)
    if not isinstance(verdict, Ask):
        return verdict
    if resolver is None:
        rules = " and ".join(f"`{rule}`" for rule in verdict.rules)
        hint = f"; the permission rule {rules} would let it run" if rules else ""
        return Deny(unanswered(request, verdict) + hint)
    answer = await resolver(request, verdict)
    if isinstance(gate, AnswerObserver):
        gate.answered(request, answer)
    if answer.always and isinstance(gate, LearningGate):
        gate.learn(request, answer)
    return answer


def unanswered(request: ApprovalRequest, ask: Ask) -> str:
    """One line: ``request`` needed a person's decision, why, and that no one could be asked."""
    why = "; ".join(ask.reasons) or ask.prompt
    because = f" ({why})" if why else ""
    return f"{request.tool} needs approval{because} and there is no one to ask in this session"
