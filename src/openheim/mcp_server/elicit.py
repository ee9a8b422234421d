"""Approvals of the ``openheim`` tool through MCP elicitation.

When the client declared the ``elicitation`` capability, a call the policy asks about becomes an
``elicitation/create`` request sent while the tool call runs (a form with one choice: once,
always or reject); "always" goes back to the policy gate, which keeps it as a rule for the rest
of the session. A client that declined, cancelled or failed to answer refuses the call. A
client without the capability, or a connection that cannot carry a request to the client
during a call (the 2026 protocol era, which asks through input-required results instead), gets
the headless resolver (``prompt.refuse``): fail closed.
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from mcp.server.mcpserver import Context
from mcp_types import ClientCapabilities, ElicitationCapability
from pydantic import BaseModel, Field

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Resolver
from openheim.mcp_server.prompt import refuse
from openheim.secrets import redact

log = logging.getLogger(__name__)

MAX_SHOWN = 2000
"""How many characters of a call's arguments the question shows."""


class ApprovalAnswer(BaseModel):
    """The form the client fills in: one choice."""

    decision: Literal["once", "always", "reject"] = Field(
        description="once: run this call; always: run such calls for the rest of the session; "
        "reject: refuse it"
    )


_ANSWERS: dict[str, Allow | Deny] = {
    "once": Allow(),
    "always": Allow(always=True),
    "reject": Deny("the user rejected this tool call"),
}


def resolver_for(ctx: Context) -> Resolver:
    """Elicitation when the client supports it and the connection can carry a request to the
    client while the tool call runs, else the headless refusal."""
    session = ctx.request_context.session
    wanted = ClientCapabilities(elicitation=ElicitationCapability())
    if session.check_client_capability(wanted) and session.can_send_request:
        return Elicitor(ctx)
    return refuse


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
        return _ANSWERS[result.data.decision]


def question(request: ApprovalRequest, ask: Ask) -> str:
    """What the client shows: the tool, its arguments, and why it needs approval."""
    shown = redact(json.dumps(dict(request.arguments), ensure_ascii=False))
    if len(shown) > MAX_SHOWN:
        shown = shown[:MAX_SHOWN] + " ..."
    lines = [f"openheim wants to run {request.tool} {shown}"]
    lines += [f"- {reason}" for reason in ask.reasons] or ([ask.prompt] if ask.prompt else [])
    if ask.detail:
        lines.append(redact(ask.detail))
    return "\n".join(lines)
