"""One headless agent turn of a conversation: the conversation's open session (its stored
session resumed, or a new one, when none is open), the message prompted, the final text
returned; the session stays open for the conversation's next message. A tool call the approval
policy would ask about is refused, since no one can be asked (``runtime.headless``); what the
policy allows (by mode or rules) runs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from openheim.events import Finished, ToolResult
from openheim.messages import StopReason
from openheim.runtime import SessionHost, SessionOptions, headless


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: its final text and stop reason, the session it ran in, how many
    tool calls were denied, and the closing lines that say so (``runtime.headless``)."""

    text: str
    stop_reason: StopReason
    session_id: str | None
    denied: int = 0
    closing: tuple[str, ...] = ()


async def run_turn(
    sessions: SessionHost,
    key: str,
    text: str,
    *,
    session_id: str | None,
    model: str | None,
    agent: str | None,
    cancel: asyncio.Event,
) -> TurnResult:
    """Prompt ``text`` in the session of conversation ``key``, which resumes the stored session
    ``session_id`` (a new session when None), and read the run to its end."""
    options = SessionOptions(resume=session_id, model=model, agent=agent)
    finished: Finished | None = None
    denied = 0
    refusals = headless.HeadlessRefusals(headless.AUTO_GATEWAY)  # this turn's own
    async with sessions.use(key, options, resolver=refusals) as session:
        async with session.prompt(text, cancel=cancel) as events:
            async for event in events:
                if isinstance(event, Finished):
                    finished = event
                elif isinstance(event, ToolResult) and event.status == "denied":
                    denied += 1
        sid = session.id
    assert finished is not None  # a run always ends with exactly one Finished
    closing = tuple(refusals.closing(denied))
    return TurnResult(finished.text, finished.stop_reason, sid, denied, closing)
