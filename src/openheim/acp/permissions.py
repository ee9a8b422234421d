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
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallUpdate,
)

from openheim.acp.translate import acp_kind, tool_locations, tool_title
from openheim.approval import Allow, ApprovalRequest, Ask, Deny

log = logging.getLogger(__name__)

OPTIONS = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)

_ANSWERS: dict[str, Allow | Deny] = {
    "allow_once": Allow(),
    "allow_always": Allow(always=True),
    "reject_once": Deny("the user rejected this tool call"),
    "reject_always": Deny("the user rejected this kind of tool call for this session", True),
}


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
    cwd = Path(request.cwd or ".")
    reasons = "\n".join(f"- {reason}" for reason in ask.reasons)
    content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = []
    if reasons:
        text = TextContentBlock(type="text", text=f"Why this needs approval:\n{reasons}")
        content.append(ContentToolCallContent(type="content", content=text))
    if ask.detail:
        detail = TextContentBlock(type="text", text=ask.detail)
        content.append(ContentToolCallContent(type="content", content=detail))
    return ToolCallUpdate(
        tool_call_id=request.tool_call_id,
        title=tool_title(request.tool, request.arguments, cwd),
        kind=acp_kind(request.kind),
        status="pending",
        raw_input=dict(request.arguments),
        locations=tool_locations(request.arguments, cwd) or None,
        content=content or None,
    )
