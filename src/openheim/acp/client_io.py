"""File and terminal access through the editor: ``fs/*`` and ``terminal/*`` requests.

Used only for what the client advertised in ``initialize``. Every terminal is released, also
when the command times out or the turn is cancelled (then it is killed first).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    ClientCapabilities,
    EnvVariable,
    TerminalExitStatus,
    TerminalToolCallContent,
    ToolCallProgress,
)

from openheim.errors import ToolError
from openheim.tools.client_io import CommandResult

OUTPUT_LIMIT = 128 * 1024
"""Bytes of terminal output the client keeps (from the end) for the model."""


class AcpClientIO:
    """``ClientIO`` for one ACP session."""

    def __init__(self, conn: Client, session_id: str, caps: ClientCapabilities | None) -> None:
        self._conn = conn
        self.session_id = session_id
        fs = caps.fs if caps is not None else None
        self._reads = bool(fs and fs.read_text_file)
        self._writes = bool(fs and fs.write_text_file)
        self._terminal = bool(caps and caps.terminal)

    @property
    def reads_files(self) -> bool:
        return self._reads

    @property
    def writes_files(self) -> bool:
        return self._writes

    @property
    def runs_commands(self) -> bool:
        return self._terminal

    async def read_text_file(self, path: Path) -> str:
        try:
            response = await self._conn.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as err:
            raise _tool_error("read", path, err) from None
        return response.content

    async def write_text_file(self, path: Path, content: str) -> None:
        try:
            await self._conn.write_text_file(
                session_id=self.session_id, path=str(path), content=content
            )
        except RequestError as err:
            raise _tool_error("write", path, err) from None

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        call_id: str,
    ) -> CommandResult:
        program, args, extra = terminal_command(command, env)
        try:
            created = await self._conn.create_terminal(
                session_id=self.session_id,
                command=program,
                args=args,
                env=extra or None,
                cwd=str(cwd),
                output_byte_limit=OUTPUT_LIMIT,
            )
        except RequestError as err:
            raise ToolError(
                f"the editor could not start the command: {err}",
                hint="check the command, or ask the user to run it",
            ) from None
        terminal = created.terminal_id
        try:
            await self._show(call_id, terminal)
            return await self._finish(terminal, time_limit)
        except asyncio.CancelledError:
            await asyncio.shield(self._kill(terminal))
            raise
        finally:
            await asyncio.shield(self._release(terminal))

    async def _show(self, call_id: str, terminal: str) -> None:
        """Attach the live terminal to the tool call, so the editor shows its output."""
        update = ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="in_progress",
            content=[TerminalToolCallContent(type="terminal", terminal_id=terminal)],
        )
        await self._conn.session_update(session_id=self.session_id, update=update)

    async def _finish(self, terminal: str, time_limit: float) -> CommandResult:
        timed_out = False
        status: TerminalExitStatus | None = None
        try:
            async with asyncio.timeout(time_limit):
                waited = await self._conn.wait_for_terminal_exit(
                    session_id=self.session_id, terminal_id=terminal
                )
                status = TerminalExitStatus(exit_code=waited.exit_code, signal=waited.signal)
        except TimeoutError:
            timed_out = True
            await self._kill(terminal)
        output = await self._conn.terminal_output(session_id=self.session_id, terminal_id=terminal)
        status = status or output.exit_status
        text = output.output
        if output.truncated:
            text = f"[earlier output was cut; the last {OUTPUT_LIMIT // 1024} KiB follow]\n{text}"
        return CommandResult(_exit_code(status), text, "", timed_out)

    async def _kill(self, terminal: str) -> None:
        with contextlib.suppress(RequestError, ConnectionError):
            await self._conn.kill_terminal(session_id=self.session_id, terminal_id=terminal)

    async def _release(self, terminal: str) -> None:
        with contextlib.suppress(RequestError, ConnectionError):
            await self._conn.release_terminal(session_id=self.session_id, terminal_id=terminal)


def terminal_command(
    command: str, env: Mapping[str, str]
) -> tuple[str, list[str], list[EnvVariable]]:
    """The program, arguments and extra variables that run ``command`` in a client terminal
    with the environment local commands get: the terminal starts from the editor's environment
    (which openheim inherited), so each variable ``child_env`` held back is unset with ``env -u``
    and each one it changed or added is passed along."""
    removed = sorted(name for name in os.environ if name not in env)
    extra = [EnvVariable(name=k, value=v) for k, v in env.items() if os.environ.get(k) != v]
    shell = ["/bin/sh", "-c", command]
    if not removed:
        return shell[0], shell[1:], extra
    unset = [arg for name in removed for arg in ("-u", name)]
    return "/usr/bin/env", [*unset, *shell], extra


def _exit_code(status: TerminalExitStatus | None) -> int:
    """The exit code, or minus the signal number for a killed command (as local runs give)."""
    if status is None:
        return -int(signal.SIGKILL)
    if status.exit_code is not None:
        return status.exit_code
    name = status.signal or "SIGKILL"
    try:
        return -int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return -int(signal.SIGKILL)


def _tool_error(action: str, path: Path, err: RequestError) -> ToolError:
    return ToolError(
        f"the editor could not {action} {path}: {err} ({err.data or 'no details'})",
        hint="check the path; the file may not exist or may not be text",
    )
