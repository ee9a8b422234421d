"""``execute_command``: ``/bin/sh -c`` in the session cwd, in a process group of its own.

* Where the OS offers it, the command runs in the sandbox of ``shell_sandbox.py`` (``bwrap``):
  it may write only to the work dir and a private temp dir, sees no other process and has no
  network unless the user allowed it. ``ToolContext.shell_sandbox`` says how strict to be.

* stdin is ``/dev/null``, so a command waiting for input ends at once instead of hanging.
* stdout and stderr are read concurrently through pipes this module owns; each keeps its first
  and last 32 KiB and counts what it drops, and keeps draining so the child never blocks.
* On timeout the whole process group gets SIGKILL and the partial output is returned. On
  cancellation the group is killed, the shell reaped, and ``CancelledError`` propagates.
* When the shell exits but a background process still holds the output pipes, it gets a short
  grace period, then its group is killed too. Owning the pipes means the call always returns,
  even if a grandchild escaped the group with ``setsid``.
* The shell is started by ``openheim.process.spawn``, so on Linux it also dies if openheim is killed
  outright (SIGKILL); the processes it started are then not killed (no group kill can run), and
  end only when they exit by themselves or on their closed output pipe.

When the session's client (``ToolContext.client``, an ACP editor) runs commands, the command runs
in one of its terminals instead (the user watches it live) and the client keeps these promises;
either way the model gets the same ``format_result`` text.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.process import spawn
from openheim.tools.base import Capabilities, Tool, ToolContext, ToolKind, ToolOutput
from openheim.tools.client_io import CommandResult
from openheim.tools.shell_sandbox import SHELL, confine, unavailable

MAX_STREAM_BYTES = 64 * 1024
DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 3600
LINGER_GRACE = 0.5


class _Capture(asyncio.Protocol):
    """One output pipe: its first and last ``cap / 2`` bytes, and how many came in all."""

    def __init__(self, cap: int) -> None:
        self._half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        room = self._half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            del self.tail[: -self._half]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def text(self, name: str) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not dropped:
            return head + tail
        note = (
            f"\n[... {dropped} bytes of {name} dropped: each stream keeps its first and last "
            f"{self._half // 1024} KiB; redirect to a file and search it to see everything ...]\n"
        )
        return head + note + tail


async def run_shell(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], time_limit: float
) -> CommandResult:
    """Run ``argv`` (``sh -c COMMAND``, maybe confined); see the module docstring for the
    guarantees."""
    out, err = _Capture(MAX_STREAM_BYTES), _Capture(MAX_STREAM_BYTES)
    with contextlib.ExitStack() as readers:
        with contextlib.ExitStack() as writers:
            out_fd = await spawn.read_pipe(out, readers, writers)
            err_fd = await spawn.read_pipe(err, readers, writers)
            proc = await spawn.exec_async(
                argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out_fd,
                stderr=err_fd,
            )
        closed = [out.closed, err.closed]
        code, timed_out, lingered = await spawn.supervise(proc, closed, time_limit, LINGER_GRACE)
    return CommandResult(code, out.text("stdout"), err.text("stderr"), timed_out, lingered)


def _headline(result: CommandResult, timeout: int) -> str:
    if result.timed_out:
        return (
            f"timed out after {timeout} s: the command and every process it started were killed; "
            "the output so far is below (raise timeout, up to 3600, if it needs longer)"
        )
    if result.code < 0:
        with contextlib.suppress(ValueError):
            return f"exit code: {result.code} (killed by {signal.Signals(-result.code).name})"
    return f"exit code: {result.code}"


def format_result(result: CommandResult, timeout: int) -> str:
    """The text the model sees: how it ended, then stdout and stderr in labelled sections."""
    parts = [
        _headline(result, timeout),
        f"--- stdout ---\n{result.stdout or '(empty)'}",
        f"--- stderr ---\n{result.stderr or '(empty)'}",
    ]
    if result.lingered:
        parts.append(
            "[background processes still holding the output were killed when the command "
            "finished; to keep one running, redirect its output: cmd > log.txt 2>&1 &]"
        )
    return "\n".join(p.rstrip("\n") for p in parts)


@dataclass(frozen=True, slots=True)
class ExecuteCommandArgs:
    command: Annotated[str, "Shell command line, run with sh -c in the working directory"]
    timeout: Annotated[
        int, "Seconds before the command and all its child processes are killed (1-3600)"
    ] = DEFAULT_TIMEOUT


class ExecuteCommand(Tool):
    """The shell tool; offered only when the shell is allowed."""

    name = "execute_command"
    description = (
        "Run a shell command (sh -c) in the working directory and return its exit code, stdout "
        "and stderr. stdin is empty, so interactive prompts fail at once: pass flags such as -y. "
        "Each of stdout and stderr is capped at 64 KiB (the first and last 32 KiB are kept); "
        "redirect long output to a file and search it. After `timeout` seconds (default 120) "
        "the command and every process it started are killed and the partial output returned. "
        "Where the OS allows, commands run sandboxed: they may write only in the working "
        "directory and a private /tmp, see no other process, have no network unless the user "
        "allowed it, and processes left in the background end with the command. "
        "Use the file tools, not cat/sed/echo, to read and edit files."
    )
    capabilities = Capabilities(read_only=False, kind=ToolKind.EXECUTE)
    args_model = ExecuteCommandArgs

    async def call(self, args: ExecuteCommandArgs, ctx: ToolContext) -> ToolOutput:
        if not 1 <= args.timeout <= MAX_TIMEOUT:
            raise ToolError(
                f"timeout must be between 1 and {MAX_TIMEOUT} seconds, got {args.timeout}",
                hint="pass a timeout in that range",
            )
        if not args.command.strip():
            raise ToolError("command is empty", hint="pass the shell command line to run")
        if "\0" in args.command:
            raise ToolError("command holds a NUL byte", hint="remove it; a shell cannot run it")
        if ctx.client is not None and ctx.client.runs_commands:
            result = await ctx.client.run_command(
                args.command,
                cwd=ctx.cwd,
                env=ctx.env,
                time_limit=args.timeout,
                call_id=ctx.call_id,
            )
        else:
            result = await _run_local(args, ctx)
        failed = result.timed_out or result.code != 0
        return ToolOutput(format_result(result, args.timeout), is_error=failed)


async def _argv(command: str, ctx: ToolContext) -> list[str]:
    """``sh -c command``, confined as ``ctx.shell_sandbox`` asks where the OS allows it."""
    sandbox = ctx.shell_sandbox
    if sandbox.mode == "off":
        return [SHELL, "-c", command]
    reason = await asyncio.to_thread(unavailable)
    if reason is None:
        work_dir = ctx.sandbox.root
        return confine(command, cwd=ctx.cwd, work_dir=work_dir, sandbox=sandbox, env=ctx.env)
    if sandbox.mode == "require":
        raise ToolError(
            f'shell commands must run in the OS sandbox (shell_sandbox = "require"), but {reason}',
            hint='tell the user: install bubblewrap, or set shell_sandbox = "auto" in config.toml',
        )
    return [SHELL, "-c", command]


async def _run_local(args: ExecuteCommandArgs, ctx: ToolContext) -> CommandResult:
    """``run_shell`` in the session cwd and environment; a failed start is a ToolError."""
    argv = await _argv(args.command, ctx)
    try:
        return await run_shell(argv, cwd=ctx.cwd, env=dict(ctx.env), time_limit=args.timeout)
    except OSError as err:
        raise ToolError(
            f"could not start the command in {ctx.display(ctx.cwd)}: {err.strerror or err}",
            hint="check that the working directory still exists",
        ) from None


execute_command = ExecuteCommand()
