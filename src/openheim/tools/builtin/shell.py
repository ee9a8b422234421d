"""``execute_command``: ``sh -c`` in the session cwd, in its own process group.

stdin is detached, stdout and stderr are read concurrently and each capped at 64 KiB (the rest is
drained and counted so the child never blocks on a full pipe). On timeout or cancellation the
whole process group is killed, so background children die too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Annotated

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind, ToolOutput
from openheim.tools.decorator import tool

MAX_STREAM_BYTES = 64 * 1024
MAX_TIMEOUT = 3600
_READ_SIZE = 65536


async def _capture(stream: asyncio.StreamReader) -> tuple[bytes, int]:
    """Everything up to the cap, and how many bytes came after it."""
    kept = bytearray()
    dropped = 0
    while chunk := await stream.read(_READ_SIZE):
        room = MAX_STREAM_BYTES - len(kept)
        kept += chunk[:room]
        dropped += max(0, len(chunk) - room)
    return bytes(kept), dropped


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _section(name: str, data: bytes, dropped: int) -> str:
    text = data.decode("utf-8", "replace")
    note = f"\n[{dropped} more bytes of {name} not shown]" if dropped else ""
    return f"--- {name} ---\n{text}{note}" if text or note else ""


def _report(code: int | None, out: tuple[bytes, int], err: tuple[bytes, int], timeout: int) -> str:
    head = f"exit code: {code}" if code is not None else f"timed out after {timeout} s (killed)"
    parts = [head, _section("stdout", *out), _section("stderr", *err)]
    return "\n".join(p for p in parts if p)


@tool(kind=ToolKind.EXECUTE)
async def execute_command(
    ctx: ToolContext,
    command: Annotated[str, "Shell command, run with sh -c in the working directory"],
    timeout: Annotated[int, "Seconds before the command and its children are killed"] = 120,  # noqa: ASYNC109
) -> ToolOutput:
    """Run a shell command and return its exit code, stdout and stderr (each capped at 64 KiB).
    stdin is empty; the command and everything it started are killed after the timeout."""
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise ToolError(f"timeout must be 1..{MAX_TIMEOUT} seconds, got {timeout}")
    proc = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        command,
        cwd=ctx.cwd,
        env=dict(ctx.env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.gather(_capture(proc.stdout), _capture(proc.stderr))
    try:
        code: int | None = await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        code = None
    except BaseException:
        _kill_group(proc)
        readers.cancel()
        await proc.wait()
        raise
    _kill_group(proc)  # background children left behind hold the pipes open
    out, err = await readers
    return ToolOutput(_report(code, out, err, timeout), is_error=code != 0)
