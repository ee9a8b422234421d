"""Running a CLI: its prompt on stdin, its stdout read line by line, and a guaranteed end.

The child starts through ``openheim.process.spawn`` (a process group of its own, killed by the
kernel
if openheim dies). It is stopped with its whole process group -- SIGTERM, a grace period, then
SIGKILL -- whenever its run ends early: the deadline passes, its output passes the cap, or the
caller stops reading (a cancelled task, a closed generator). Nothing it started outlives the
run, so a disconnected client or a cancelled prompt leaves no orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from openheim.cliagents.parse import CliEvent, StreamParser, parse_line
from openheim.errors import ProviderError
from openheim.formats.regex import utf8
from openheim.process import spawn

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 300.0
MAX_OUTPUT: Final = 10 * 1024 * 1024
"""The most bytes of stdout one run may print (10 MB); past it the run is stopped."""
GRACE: Final = 2.0
"""Seconds between SIGTERM and SIGKILL of a CLI that is being stopped."""
_CHUNK: Final = 64 * 1024
_STDERR_TAIL: Final = 2000


@dataclass(frozen=True)
class CliRun:
    """One run of a CLI: its command, folder, environment and prompt, and its limits."""

    name: str
    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str] = field(repr=False)
    prompt: str = field(repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = MAX_OUTPUT
    grace: float = GRACE


def failure(run: CliRun, message: str, hint: str | None = None) -> ProviderError:
    """A failed run as an error naming the CLI (it falls through in a fallback chain)."""
    return ProviderError(f"{run.name}: {message}", hint=hint, provider=run.name)


async def stream_run(run: CliRun, parser: StreamParser) -> AsyncGenerator[CliEvent, None]:
    """The events of the run's output, as they come; ends when the CLI exits.

    Raises ProviderError when the CLI cannot start, passes the deadline or the output cap, or
    exits non-zero or with an error it reported; the parser's ``outcome`` holds the rest."""
    proc = await _start(run)
    feeder = asyncio.ensure_future(_feed(proc, run.prompt))
    stderr = bytearray()
    drainer = asyncio.ensure_future(_drain(proc, stderr))
    deadline = asyncio.get_running_loop().time() + run.timeout
    try:
        async for line in _lines(run, proc, deadline):
            for event in parse_line(line, parser):
                yield event
        async with asyncio.timeout_at(deadline):
            code = await proc.wait()
            await drainer
    except TimeoutError:
        raise failure(
            run, f"no answer within {run.timeout:g} s", "raise the timeout, or ask for less"
        ) from None
    finally:
        await asyncio.shield(_stop(proc, run.grace, (feeder, drainer)))
    _check(run, parser, code, bytes(stderr))


async def _start(run: CliRun) -> asyncio.subprocess.Process:
    try:
        return await spawn.exec_async(
            run.argv,
            env=run.env,
            cwd=run.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise failure(
            run, f"could not start {run.argv[0]}: {exc.strerror or exc}", "check the CLI's path"
        ) from None


async def _feed(proc: asyncio.subprocess.Process, prompt: str) -> None:
    """Write the prompt to stdin and close it (a CLI that stops reading early is fine); a lone
    surrogate in the history goes as U+FFFD (``regex.utf8``)."""
    assert proc.stdin is not None
    with contextlib.suppress(ConnectionError):
        proc.stdin.write(utf8(prompt))
        await proc.stdin.drain()
    proc.stdin.close()


async def _drain(proc: asyncio.subprocess.Process, tail: bytearray) -> None:
    """Read stderr to its end, keeping only its last bytes (for the error message)."""
    assert proc.stderr is not None
    while chunk := await proc.stderr.read(_CHUNK):
        tail += chunk
        del tail[:-_STDERR_TAIL]


async def _lines(
    run: CliRun, proc: asyncio.subprocess.Process, deadline: float
) -> AsyncIterator[bytes]:
    """Stdout split into lines (of any length), each read before the deadline."""
    assert proc.stdout is not None
    pending = bytearray()
    total = 0
    while True:
        async with asyncio.timeout_at(deadline):
            chunk = await proc.stdout.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > run.max_output:
            raise failure(run, f"printed more than {run.max_output} bytes; stopped")
        pending += chunk
        *lines, rest = pending.split(b"\n")
        pending = bytearray(rest)
        for line in lines:
            yield bytes(line)
    if pending:
        yield bytes(pending)


async def _stop(
    proc: asyncio.subprocess.Process, grace: float, helpers: Sequence[asyncio.Future[None]]
) -> None:
    """End the run: the process group gets SIGTERM, then SIGKILL after ``grace`` seconds if
    the CLI is still there; whatever else is left in the group is killed too."""
    if proc.returncode is None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            _signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
    _signal_group(proc.pid, signal.SIGKILL)
    for helper in helpers:
        helper.cancel()
    await asyncio.gather(*helpers, return_exceptions=True)
    await _discard(proc, grace)


async def _discard(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Read what is left of stdout and stderr to their end (the group is dead, so the end
    comes at once), which lets asyncio close the pipes."""
    for stream in (proc.stdout, proc.stderr):
        if stream is None:
            continue
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(grace):
                while await stream.read(_CHUNK):
                    pass


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _check(run: CliRun, parser: StreamParser, code: int, stderr: bytes) -> None:
    """Raise when the CLI failed: an error it reported, or a non-zero exit status."""
    outcome = parser.outcome
    detail = stderr.decode("utf-8", errors="replace").strip().splitlines()
    if detail:
        log.debug("%s stderr: %s", run.name, detail[-1])
    if outcome.error is not None:
        raise failure(run, outcome.error)
    if code != 0:
        last = f": {detail[-1][:300]}" if detail else ""
        raise failure(run, f"exited with status {code}{last}", "run the CLI by hand to see why")
    if not outcome.finished:
        raise failure(run, "ended without reporting a result", "check the CLI's version")
