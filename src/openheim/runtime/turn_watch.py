"""``TurnWatch``: what a session does around each prompt besides the agent loop.

It runs the ``user_prompt`` hook before the prompt enters the history (it may rewrite or block
it), starts the turn's checkpoint, watches the loop's events to run ``post_tool`` and ``stop``
hooks and to find files changed by ``execute_command``, and is the tools' ``FileWatch``: it keeps
each file's prior content before a write and runs the ``file_write`` hook after it. Hook
failures and shell changes come out as ``Notice`` events of the prompt, so every surface shows
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable
from pathlib import Path
from typing import TypeVar

from openheim.events import (
    Event,
    Finished,
    Notice,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
)
from openheim.handover import Tap
from openheim.messages import Message, TextBlock
from openheim.runtime import shell_changes
from openheim.runtime.checkpoints import TurnRecorder, not_kept
from openheim.runtime.hooks import Hooks
from openheim.runtime.stored_checkpoints import checkpoints_for

log = logging.getLogger(__name__)

T = TypeVar("T")
SHELL_TOOL = "execute_command"
SHOWN_PATHS = 10


class TurnWatch:
    """Hooks (may be empty) and checkpoints (None for an unsaved session) of one session."""

    def __init__(self, hooks: Hooks, recorder: TurnRecorder | None, work_dir: Path) -> None:
        self.hooks = hooks
        self.recorder = recorder
        self.work_dir = work_dir
        self.blocked: str | None = None
        """Why the ``user_prompt`` hook blocked the last prompt (None: it did not)."""
        self._snapshot: shell_changes.Snapshot | None = None
        self._notes: list[Notice] = []
        self._too_big = False
        self._cancelled = False

    def drain(self) -> list[Notice]:
        """Notices not told yet: hook failures, shell changes, checkpoints that failed."""
        told, self._notes = [*self._notes, *self.hooks.drain()], []
        return told

    async def prompt(self, message: Message, turn: int, cancel: asyncio.Event) -> Message:
        """Start turn ``turn`` (the history index ``message`` will take); the message to run,
        rewritten by the ``user_prompt`` hook. When the hook blocks it (or ``cancel`` is set
        while the hook runs), ``blocked`` says why and ``refusal()`` gives the prompt's
        events."""
        self.blocked, self._snapshot, self._too_big = None, None, False
        self._cancelled = False
        if self.hooks.has("user_prompt"):
            reply = await _unless(cancel, self.hooks.run("user_prompt", prompt=message.text))
            if cancel.is_set():
                self.blocked, self._cancelled = "", True
                return message
            if reply is not None and reply.decision == "block":
                self.blocked = reply.reason or "the user_prompt hook blocked it"
                return message
            if reply is not None and reply.prompt is not None:
                rest = tuple(b for b in message.content if not isinstance(b, TextBlock))
                message = Message("user", (TextBlock(reply.prompt), *rest))
        if self.recorder is not None:
            self.recorder.begin(turn, message.text)
        return message

    def refusal(self) -> list[Event]:
        """The events of a prompt that never ran: why, then ``Finished`` (stop reason
        ``refusal`` when the ``user_prompt`` hook blocked it, ``cancelled`` when it was
        cancelled while the hook ran)."""
        if self._cancelled:
            return [*self.drain(), Finished("cancelled", "user_cancelled")]
        why = self.blocked or ""
        note = Notice(f"the user_prompt hook blocked this prompt: {why}", "warning", "loop")
        return [*self.drain(), note, Finished("refusal", "prompt_blocked", text=why)]

    async def before_write(self, path: Path) -> None:
        if self.recorder is None:
            return
        try:
            await asyncio.to_thread(self.recorder.before_write, path)
        except OSError as err:
            self._note(not_kept(path, err))

    async def written(self, path: Path) -> None:
        if self.recorder is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.recorder.written, path)
        await self.hooks.run("file_write", path=str(path))

    def guard(self, tap: Tap) -> Tap:
        """``tap``, refusing a delta while notices wait: ``events`` tells them after it."""

        def guarded(delta: TextDelta | ThinkingDelta) -> bool:
            return not self._notes and not self.hooks.warnings and tap(delta)

        return guarded

    async def events(self, run: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
        """``run``'s events with the hooks' and the checks' notices among them."""
        calls: dict[str, ToolCall] = {}
        async with contextlib.aclosing(run) as events:
            async for event in events:
                if isinstance(event, TextDelta | ThinkingDelta):  # most events: nothing to do
                    yield event
                    if self._notes or self.hooks.warnings:
                        for note in self.drain():
                            yield note
                    continue
                if isinstance(event, Finished):
                    await self.hooks.run(
                        "stop", stop_reason=event.stop_reason, reason=event.reason, text=event.text
                    )
                    for note in self.drain():
                        yield note
                    yield event
                    continue
                if isinstance(event, ToolCall):
                    calls[event.id] = event
                    if event.name == SHELL_TOOL:
                        await self._shell_before()
                yield event
                if isinstance(event, ToolResult):
                    await self._after_tool(event, calls.get(event.id))
                for note in self.drain():
                    yield note

    async def _after_tool(self, result: ToolResult, call: ToolCall | None) -> None:
        if result.name == SHELL_TOOL:
            await self._shell_after()
        await self.hooks.run(
            "post_tool",
            tool=result.name,
            arguments=dict(call.arguments) if call is not None else {},
            result={"content": result.content, "is_error": result.is_error},
            status=result.status,
        )

    async def _shell_before(self) -> None:
        if self.recorder is None or self._snapshot is not None or self._too_big:
            return
        self._snapshot = await asyncio.to_thread(shell_changes.snapshot, self.work_dir)
        if self._snapshot is None:
            self._too_big = True
            self._note(
                "the work dir has too many files to find what shell commands change; "
                "undo restores only what the file tools wrote"
            )

    async def _shell_after(self) -> None:
        before, recorder = self._snapshot, self.recorder
        if before is None or recorder is None:
            return
        after = await asyncio.to_thread(shell_changes.snapshot, self.work_dir)
        self._snapshot = after
        if after is None:
            return
        written = recorder.tool_written()
        found = [p for p in shell_changes.changed(before, after) if p not in written]
        if not found:
            return
        try:
            await asyncio.to_thread(recorder.shell_changed, found)
        except OSError:
            log.warning("could not record shell changes in the checkpoint", exc_info=True)
        shown = ", ".join(found[:SHOWN_PATHS]) + (" ..." if len(found) > SHOWN_PATHS else "")
        self._note(
            f"{SHELL_TOOL} changed {len(found)} file{'s' if len(found) != 1 else ''} "
            f"that undo cannot restore: {shown}"
        )

    def _note(self, line: str) -> None:
        self._notes.append(Notice(line, "warning", "loop"))


async def _unless(cancel: asyncio.Event, work: Awaitable[T]) -> T | None:
    """``work``'s result, or None once ``cancel`` is set first (``work`` is then cancelled:
    a hook's process group is killed)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return task.result() if not task.cancelled() else None


def watch_session(
    hooks: Hooks, session_id: str | None, data_dir: Path, work_dir: Path, store: object = None
) -> TurnWatch:
    """The watch of a session: checkpoints when it is stored (has an id), in ``store``'s
    database when it keeps them, else under ``data_dir``."""
    hooks.session_id = session_id
    recorder = None
    if session_id is not None:
        recorder = TurnRecorder(checkpoints_for(data_dir, store), session_id)
    return TurnWatch(hooks, recorder, work_dir)
