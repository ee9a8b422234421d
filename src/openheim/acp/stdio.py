"""ACP on this process's stdin and stdout.

stdout carries nothing but protocol messages: the protocol gets private duplicates of fds 0
and 1, then fd 1 is pointed at stderr and fd 0 at /dev/null. A stray ``print``, a log line or a
child process that inherits the standard descriptors can then neither corrupt the stream nor
steal input from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from openheim.acp.server import serve_acp
from openheim.acp.transport import MAX_LINE_BYTES
from openheim.runtime import Runtime


def _private_stdio() -> tuple[int, int]:
    """Duplicates of stdin and stdout for the protocol; the originals are redirected."""
    sys.stdout.flush()
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return proto_in, proto_out


async def _streams(
    proto_in: int, proto_out: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(proto_in, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
        os.fdopen(proto_out, "wb", buffering=0),
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def serve_stdio(runtime: Runtime) -> None:
    """Serve until the client closes stdin or a SIGINT/SIGTERM arrives; sessions are closed
    (their MCP servers and commands stopped) either way."""
    reader, writer = await _streams(*_private_stdio())
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, _stop, task)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serve_acp(reader, writer, runtime)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def _stop(task: asyncio.Task[object] | None) -> None:
    if task is not None:
        task.cancel()
