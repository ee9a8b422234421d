"""Approvals of the ``openheim`` tool through MCP elicitation.

When the client declared the ``elicitation`` capability, a call the policy asks about becomes an
``elicitation/create`` request sent while the tool call runs (a form drawing the runtime's
approval choices, and a reason for the model when rejecting); "always" goes back to the policy
gate, which keeps it as a rule for the rest of the session. A client that declined, cancelled
or failed to answer refuses the call. A client without the capability, or a connection that
cannot carry a request to the client during a call (the 2026 protocol era, which asks through
input-required results instead), gets no resolver, so the run refuses such calls headless
(``runtime.headless``): fail closed.
"""

from __future__ import annotations

import logging

from mcp.server.mcpserver import Context
from mcp_types import ClientCapabilities, ElicitationCapability
from pydantic import BaseModel, Field, field_validator

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Resolver
from openheim.runtime import approvals

log = logging.getLogger(__name__)


def _described(choice: approvals.Choice) -> str:
    """A choice as the form's description names it: its wire id and its label."""
    session = " (for the rest of the session)" if choice.always else ""
    return f"{choice.id}: {choice.label}{session}"


class ApprovalAnswer(BaseModel):
    """The form the client fills in: one choice, and the words for the model on a rejection.
    The choices are the runtime's vocabulary (``runtime.approvals``), drawn here, never
    listed: its wire ids are the field's ``enum``, its labels the description."""

    decision: str = Field(
        description="; ".join(_described(choice) for choice in approvals.CHOICES),
        json_schema_extra={"enum": [choice.id for choice in approvals.CHOICES]},
    )
    reason: str = Field(
        default="",
        max_length=approvals.MAX_REASON,
        description="when rejecting: what the model should do instead (optional)",
    )

    @field_validator("decision")
    @classmethod
    def _offered(cls, value: str) -> str:
        """Only a choice the form offered; else the error names the valid ones."""
        return approvals.choice_named(value).id


def resolver_for(ctx: Context) -> Resolver | None:
    """Elicitation when the client supports it and the connection can carry a request to the
    client while the tool call runs, else None (the run refuses headless)."""
    session = ctx.request_context.session
    wanted = ClientCapabilities(elicitation=ElicitationCapability())
    if session.check_client_capability(wanted) and session.can_send_request:
        return Elicitor(ctx)
    return None


class Elicitor:
    """The ``Resolver`` of one tool call: asks the client through elicitation."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        try:
            result = await self._ctx.elicit(question(request, ask), ApprovalAnswer)
        except Exception as err:  # an error reply, a malformed answer, a closed connection
            log.warning("the MCP client did not answer an approval request: %s", err)
            return Deny(f"the MCP client could not be asked for approval ({err})")
        if result.action != "accept":
            return Deny(f"the MCP client's user did not approve this tool call ({result.action})")
        return approvals.answer(approvals.choice_named(result.data.decision), result.data.reason)


def question(request: ApprovalRequest, ask: Ask) -> str:
    """What the client shows: the runtime's question (title, arguments, risks, diff)."""
    shown = approvals.question(request, ask)
    lines = [shown.title, shown.arguments, *(f"- {reason}" for reason in shown.reasons)]
    return "\n".join(lines + ([shown.diff] if shown.diff else []))
