"""One prompt of the ``openheim`` tool (and of each ``agent__NAME`` tool): run it through the
runtime headless and hand back the final text, the stop reason and the session id.

Approvals follow the configured policy; a call the policy would ask about goes to the client
through elicitation where it supports that (``elicit``), else it is refused (there is no one to
ask), so a run never waits for an answer no one can give. The run streams a progress notification
per model call and tool call while the client asked for progress. A cancelled tool call (the
client's ``notifications/cancelled``) cancels the run, which records its cancellation in the
session's history before the call ends. The result reports the run's token usage, and its cost
where the model's price is known.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp_types import CallToolResult, TextContent

from openheim.approval import Resolver
from openheim.errors import OpenheimError
from openheim.events import CostUpdate, Event, Finished, IterationStart, ToolCall
from openheim.runtime import PromptRun, Runtime, Session, SessionHost, SessionOptions, headless

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


def error_result(message: str) -> CallToolResult:
    """A tool error the client sees as an ``isError`` result."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class PromptRunner:
    """Runs the prompt tool calls of one server over ``runtime``.

    A session stays open between the calls that continue it (``SessionHost``): its MCP
    servers start and its ``session_start`` hook runs once, until it is idle or the server
    stops (``aclose``). A call that continues a session this server is still running (or
    still cancelling) waits for that run to end first, instead of failing with "session
    busy"."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.sessions = SessionHost(runtime)
        self._running: dict[str, asyncio.Event] = {}

    async def aclose(self) -> None:
        """Close the sessions kept open (the server stops)."""
        await self.sessions.aclose()

    async def __call__(
        self, call: PromptCall, progress: Progress, resolver: Resolver | None = None
    ) -> CallToolResult:
        """Run ``call`` in a new or stored session, approvals settled by ``resolver`` (none:
        no one can be asked, and such calls are refused, ``runtime.headless``); errors come
        back as ``isError`` results."""
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
        refusals = headless.HeadlessRefusals()  # this call's own
        try:
            async with self.sessions.use(None, options, resolver=resolver or refusals) as session:
                outcome = await self._run(session, call.prompt, progress)
        except OpenheimError as err:
            return error_result(f"openheim: {err}")
        return _result(outcome, session.id, refusals.closing(outcome.finished.denied))

    async def _ended(self, session_id: str) -> None:
        """Wait for this server's runs of the session (an id or its prefix) to end."""
        for sid, done in list(self._running.items()):
            if sid.startswith(session_id):
                await done.wait()

    async def _run(self, session: Session, prompt: str, progress: Progress) -> Outcome:
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


async def _drive(session: Session, prompt: str, progress: Progress) -> Outcome:
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


@dataclass(frozen=True)
class Outcome:
    """How a run ended, and what it cost (None when no model of it has a known price)."""

    finished: Finished
    cost: float | None


async def _consume(run: PromptRun, progress: Progress, cancel: asyncio.Event) -> Outcome:
    """Read the run's events to their end (so the run frees the session before the session
    closes), reporting progress until it is cancelled; the run's ``Finished`` and cost."""
    finished: Finished | None = None
    costs: list[float] = []
    count = 0
    async with run as events:
        async for event in events:
            if isinstance(event, Finished):
                finished = event
            elif isinstance(event, CostUpdate):
                costs += [] if event.turn_cost is None else [event.turn_cost]
            elif (line := _progress_line(event)) is not None and not cancel.is_set():
                count += 1
                await progress(count, line)
    assert finished is not None  # a run always ends with exactly one Finished
    return Outcome(finished, sum(costs) if costs else None)


def _progress_line(event: Event) -> str | None:
    if isinstance(event, IterationStart):
        return f"model call {event.iteration}"
    if isinstance(event, ToolCall):
        return f"tool {event.name}"
    return None


def _result(outcome: Outcome, session_id: str | None, closing: list[str]) -> CallToolResult:
    """The final text for reading, ending with the ``closing`` lines when calls were denied,
    and text, stop reason, session id, usage and cost as structured content."""
    finished = outcome.finished
    usage = finished.usage
    structured = {
        "text": finished.text,
        "stop_reason": finished.stop_reason,
        "session_id": session_id,
        "usage": usage.to_dict(),
        "cost_usd": outcome.cost,
    }
    spent = f"{usage.input_tokens} input and {usage.output_tokens} output tokens"
    if outcome.cost is not None:
        spent += f", ${outcome.cost:.4f}"
    footer = (
        f"\n\n[stop reason: {finished.stop_reason}; session id: {session_id or 'not saved'}; "
        f"{spent}]"
    )
    footer += "".join(f"\n{line}" for line in closing)
    return CallToolResult(
        content=[TextContent(type="text", text=finished.text + footer)],
        structured_content=structured,
    )
