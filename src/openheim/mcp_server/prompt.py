"""One prompt of the ``openheim`` tool (and of each ``agent__NAME`` tool): run it through the
runtime headless and hand back the final text, the stop reason and the session id.

Approvals follow the configured policy; a call the policy would ask about is refused (there is
no one to ask), so a run never waits for an answer. The run streams a progress notification
per model call and tool call while the client asked for progress. A cancelled tool call (the
client's ``notifications/cancelled``) cancels the run, which records its cancellation in the
session's history before the call ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp_types import CallToolResult, TextContent

from openheim.approval import ApprovalRequest, Ask, Deny, unanswered
from openheim.errors import OpenheimError
from openheim.events import Event, Finished, IterationStart, ToolCall
from openheim.runtime import PromptRun, Runtime, Session, SessionOptions

Progress = Callable[[float, str], Awaitable[None]]
"""Reports progress: a count that grows, and a line that says what happens."""


@dataclass(frozen=True)
class PromptCall:
    """The arguments of one prompt tool call."""

    prompt: str
    session_id: str | None = None
    agent: str | None = None
    model: str | None = None
    cwd: str | None = None


async def refuse(request: ApprovalRequest, ask: Ask) -> Deny:
    """The resolver of a headless run: every call the policy asks about is refused."""
    return Deny(f"{unanswered(request, ask)} (openheim mcp serve runs headless)")


def error_result(message: str) -> CallToolResult:
    """A tool error the client sees as an ``isError`` result."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class PromptRunner:
    """Runs the prompt tool calls of one server over ``runtime``.

    A call that continues a session this server is still running (or still cancelling) waits
    for that run to end first, instead of failing with "session busy"."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._running: dict[str, asyncio.Event] = {}

    async def __call__(self, call: PromptCall, progress: Progress) -> CallToolResult:
        """Run ``call`` in a new or stored session; errors come back as ``isError`` results."""
        if not call.prompt.strip():
            return error_result("the prompt is empty: pass the task as `prompt`")
        if call.session_id:
            await self._ended(call.session_id)
        options = SessionOptions(
            resume=call.session_id,
            model=call.model,
            agent=call.agent,
            cwd=_cwd(self.runtime, call.cwd),
        )
        try:
            async with self.runtime.open_session(options, resolver=refuse) as session:
                finished = await self._run(session, call.prompt, progress)
        except OpenheimError as err:
            return error_result(f"openheim: {err}")
        return _result(finished, session.id)

    async def _ended(self, session_id: str) -> None:
        """Wait for this server's runs of the session (an id or its prefix) to end."""
        for sid, done in list(self._running.items()):
            if sid.startswith(session_id):
                await done.wait()

    async def _run(self, session: Session, prompt: str, progress: Progress) -> Finished:
        if session.id is None:
            return await _drive(session, prompt, progress)
        done = self._running[session.id] = asyncio.Event()
        try:
            return await _drive(session, prompt, progress)
        finally:
            del self._running[session.id]
            done.set()


def _cwd(runtime: Runtime, raw: str | None) -> Path | None:
    """The session folder: a relative ``cwd`` is taken inside the work dir (the runtime
    refuses a folder outside it)."""
    return None if raw is None else runtime.settings.work_dir / Path(raw).expanduser()


async def _drive(session: Session, prompt: str, progress: Progress) -> Finished:
    """Run the prompt in a task of its own, so that a cancelled tool call cancels the run and
    waits (shielded) for it to record the cancellation, instead of tearing it down."""
    cancel = asyncio.Event()
    task = asyncio.ensure_future(_consume(session.prompt(prompt, cancel=cancel), progress, cancel))
    try:
        return await asyncio.shield(task)
    except BaseException:
        cancel.set()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([task])
        raise


async def _consume(run: PromptRun, progress: Progress, cancel: asyncio.Event) -> Finished:
    """Read the run's events to their end (so the run frees the session before the session
    closes), reporting progress until it is cancelled; the run's ``Finished``."""
    finished: Finished | None = None
    count = 0
    async with run as events:
        async for event in events:
            if isinstance(event, Finished):
                finished = event
            elif (line := _progress_line(event)) is not None and not cancel.is_set():
                count += 1
                await progress(count, line)
    assert finished is not None  # a run always ends with exactly one Finished
    return finished


def _progress_line(event: Event) -> str | None:
    if isinstance(event, IterationStart):
        return f"model call {event.iteration}"
    if isinstance(event, ToolCall):
        return f"tool {event.name}"
    return None


def _result(finished: Finished, session_id: str | None) -> CallToolResult:
    """The final text for reading, and text, stop reason and session id as structured content."""
    structured = {
        "text": finished.text,
        "stop_reason": finished.stop_reason,
        "session_id": session_id,
    }
    footer = f"\n\n[stop reason: {finished.stop_reason}; session id: {session_id or 'not saved'}]"
    return CallToolResult(
        content=[TextContent(type="text", text=finished.text + footer)],
        structured_content=structured,
    )
