"""Approvals over ACP: a call the policy asks about becomes ``session/request_permission``.

Calls the policy allows or denies never reach the client. "Always" answers go back to the
policy gate, which keeps them as rules for the rest of the session. When the turn is cancelled
the pending request is abandoned and the call counts as cancelled.
"""

from __future__ import annotations

import logging
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    PermissionOptionKind,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallUpdate,
)

from openheim.acp.translate import acp_kind, tool_locations
from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.runtime import approvals, titles

log = logging.getLogger(__name__)

_KINDS: dict[str, PermissionOptionKind] = {
    approvals.ONCE.id: "allow_once",
    approvals.ALWAYS.id: "allow_always",
    approvals.REJECT.id: "reject_once",
    approvals.REJECT_ALWAYS.id: "reject_always",
}
"""The ACP kind of each of the vocabulary's choices; its option id is the kind."""
OPTIONS = tuple(
    PermissionOption(option_id=_KINDS[c.id], name=c.label.capitalize(), kind=_KINDS[c.id])
    for c in approvals.CHOICES
)
_ANSWERS: dict[str, Allow | Deny] = {_KINDS[c.id]: approvals.answer(c) for c in approvals.CHOICES}


class PermissionAsker:
    """The ``Resolver`` of one ACP session."""

    def __init__(self, conn: Client, session_id: str) -> None:
        self._conn = conn
        self.session_id = session_id

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        try:
            response = await self._conn.request_permission(
                session_id=self.session_id,
                tool_call=_tool_call(request, ask),
                options=list(OPTIONS),
            )
        except (RequestError, ValueError) as err:  # an error reply, or a malformed one
            log.warning("the client did not answer a permission request: %s", err)
            return Deny(f"the editor could not be asked for permission ({err})")
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome):
            answer = _ANSWERS.get(outcome.option_id)
            if answer is not None:
                return answer
            return Deny(f"the client answered with an unknown option {outcome.option_id!r}")
        return Deny("the permission request was cancelled")


def _tool_call(request: ApprovalRequest, ask: Ask) -> ToolCallUpdate:
    """The call as the editor shows it: its own title (this updates the call the editor lists;
    the editor words the question), its location, the question's risks and diff."""
    cwd = Path(request.cwd or ".")
    asked = approvals.question(request, ask)
    reasons = "\n".join(f"- {reason}" for reason in asked.reasons)
    content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = []
    for text in (f"Why this needs approval:\n{reasons}" if reasons else "", asked.diff):
        if text:
            block = TextContentBlock(type="text", text=text)
            content.append(ContentToolCallContent(type="content", content=block))
    return ToolCallUpdate(
        tool_call_id=request.tool_call_id,
        title=titles.tool_title(request.tool, request.arguments, cwd),
        kind=acp_kind(request.kind),
        status="pending",
        raw_input=dict(request.arguments),
        locations=tool_locations(request.arguments, cwd) or None,
        content=content or None,
    )
