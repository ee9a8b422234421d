"""The stdio transport: an MCP server as a child process in its own process group.

The server is started by ``openheim.process.spawn``, so on Linux it also dies when openheim is
killed
with SIGKILL.

The SDK's ``stdio_client`` signals the group only when the server outlives its grace period,
so a server that exits at once can leave its own children behind. Here the whole group gets
SIGTERM, then SIGKILL, on every exit path (normal, error, cancel, Ctrl-C), so nothing leaks.
Stderr is kept (last lines only) so a failed start-up can be explained.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import anyio
import mcp_types
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from openheim.process import spawn

GRACE_S = 2.0
"""How long a server may take to exit after its stdin closes, and after SIGTERM."""
_POLL_S = 0.02


@dataclass
class ChildProcess:
    """What the connection needs to know about its server process."""

    pid: int | None = None
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    process: Process | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def stderr_tail(self) -> str:
        return "; ".join([line.strip() for line in self.stderr if line.strip()][-3:])[-300:]


@asynccontextmanager
async def stdio_transport(
    argv: Sequence[str], env: dict[str, str], cwd: str | None, child: ChildProcess
) -> AsyncIterator[TransportStreams]:
    """Run ``argv`` and speak JSON-RPC lines over its stdin/stdout; kill its group on exit."""
    process = await spawn.open_process(argv, env=env, cwd=cwd, stderr=subprocess.PIPE)
    child.pid, child.process = process.pid, process
    read_w, read_r = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_w, write_r = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_stdout, process, read_w)
            tg.start_soon(_write_stdin, process, write_r)
            tg.start_soon(_keep_stderr, process, child)
            try:
                yield read_r, write_w
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_group(process)
            for stream in (read_r, read_w, write_r, write_w):
                await stream.aclose()


async def _read_stdout(
    process: Process, out: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    """Parse each stdout line into a message (a bad line becomes an exception the SDK reports)."""
    assert process.stdout is not None
    async with out:
        buffer = ""
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            async for chunk in TextReceiveStream(process.stdout, errors="replace"):
                *lines, buffer = (buffer + chunk).split("\n")
                for line in lines:
                    if line.strip():
                        await out.send(_parse(line))


def _parse(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as err:
        return err


async def _write_stdin(
    process: Process, messages: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    assert process.stdin is not None
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async with messages:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((data + "\n").encode())


async def _keep_stderr(process: Process, child: ChildProcess) -> None:
    stream: ByteReceiveStream | None = process.stderr
    assert stream is not None
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in TextReceiveStream(stream, errors="replace"):
            child.stderr.extend(chunk.splitlines())


async def stop_group(process: Process) -> None:
    """Close stdin, give the server ``GRACE_S`` to exit, then SIGTERM and SIGKILL its group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    await _wait(lambda: process.returncode is not None)
    pgid = process.pid  # a session leader's pid is its group id, even after it is reaped
    if _signal_group(pgid, signal.SIGTERM) and not await _wait(lambda: not _group_alive(pgid)):
        _signal_group(pgid, signal.SIGKILL)
    if process.returncode is None:
        process.kill()
    with anyio.move_on_after(GRACE_S):
        await process.wait()


async def _wait(done: Callable[[], bool]) -> bool:
    """Poll ``done()`` until true or ``GRACE_S`` passes; whether it became true."""
    with anyio.move_on_after(GRACE_S):
        while not done():  # noqa: ASYNC110 - process and group exits raise no event to await
            await anyio.sleep(_POLL_S)
        return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group; False when the group is already gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
