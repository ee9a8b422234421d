"""The approval gate: every tool call passes it before it runs.

A gate answers ``Allow``, ``Deny(reason)`` (the reason is shown to the model) or ``Ask``. An
``Ask`` is settled by whoever drives the session (a terminal prompt, an ACP client, a callback)
through a ``Resolver``; with no resolver an ``Ask`` counts as a denial. The core ships the
allow-all and deny-all gates; the policy engine is another gate behind the same interface.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call awaiting approval."""

    tool_call_id: str
    tool: str
    arguments: Mapping[str, Any]
    read_only: bool
    kind: str


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str = "the user denied this tool call"


@dataclass(frozen=True, slots=True)
class Ask:
    prompt: str = ""


Verdict: TypeAlias = Allow | Deny | Ask
Resolver: TypeAlias = Callable[[ApprovalRequest], Awaitable[Allow | Deny]]


class ApprovalGate(Protocol):
    async def check(self, request: ApprovalRequest) -> Verdict: ...


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
        return Deny(f"{request.tool} needs approval and there is no one to ask in this session")
    return await resolver(request)
