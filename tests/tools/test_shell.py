"""``execute_command``: output, exit codes, timeouts, cancellation and process cleanup.

Every test runs twice: confined in the OS sandbox (``bwrap``; CI installs it, and the run fails
rather than skips where it is missing) and unconfined (``shell_sandbox = "off"``). Inside the
sandbox, process ids are those of its own PID namespace, so processes are found on the host by
a unique ``sleep`` argument (``Sleeper``) instead of by ``$!``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.errors import ArgumentError, ToolError
from openheim.process.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.builtin.shell import MAX_STREAM_BYTES, execute_command
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import ShellSandbox, unavailable
from tests.processes import Sleeper, alive, wait_until
from tests.tools.support import call

MODES = ("sandboxed", "unconfined")


@pytest.fixture
def sleeper() -> Iterator[Sleeper]:
    one = Sleeper()
    yield one
    one.kill()


@pytest.fixture(params=MODES)
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> ToolContext:
    """A context on a fresh work dir, confined in the OS sandbox or not."""
    confined = request.param == "sandboxed"
    if confined:
        reason = unavailable()
        assert reason is None, f"{reason}: install bubblewrap (.ci/run does)"
    box = ShellSandbox(mode="require" if confined else "off")
    return ToolContext(PathSandbox(tmp_path), tmp_path.resolve(), child_env(), shell_sandbox=box)


def confined(ctx: ToolContext) -> bool:
    return ctx.shell_sandbox.mode != "off"


async def test_output_exit_code_and_cwd(ctx: ToolContext, work: Path) -> None:
    (work / "sub").mkdir()
    sub = dataclasses.replace(ctx, cwd=work / "sub")
    out = await call(execute_command, sub, command="pwd; echo oops >&2")
    assert not out.is_error
    assert out.content == f"exit code: 0\n--- stdout ---\n{work}/sub\n--- stderr ---\noops"


async def test_nonzero_exit_and_signals_are_errors(ctx: ToolContext) -> None:
    out = await call(execute_command, ctx, command="echo partial; exit 3")
    assert out.is_error and out.content.startswith("exit code: 3\n--- stdout ---\npartial\n")
    assert out.content.endswith("--- stderr ---\n(empty)")
    killed = await call(execute_command, ctx, command="kill -9 $$")
    # bwrap reports a shell killed by a signal as shells do: 128 + the signal's number
    headline = "exit code: 137" if confined(ctx) else "exit code: -9 (killed by SIGKILL)"
    assert killed.is_error and killed.content.startswith(headline + "\n")


@pytest.fixture
def open_stdin() -> Iterator[None]:
    """Make this process's fd 0 a pipe that never ends, as under a terminal or a parent agent."""
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)


@pytest.mark.usefixtures("open_stdin")
async def test_stdin_is_detached(ctx: ToolContext) -> None:
    """``cat`` reading an inherited stdin would wait until the command's own timeout."""
    out = await call(execute_command, ctx, command="cat; echo done", timeout=5)
    assert not out.is_error and "timed out" not in out.content
    assert out.content.startswith("exit code: 0\n--- stdout ---\ndone")


async def test_large_outputs_are_capped_and_drained(ctx: ToolContext) -> None:
    command = (
        'i=0; while [ $i -lt 20000 ]; do echo "out line $i"; echo "err line $i" >&2; '
        "i=$((i+1)); done; echo last-out; echo last-err >&2"
    )
    out = await call(execute_command, ctx, command=command, timeout=60)
    assert not out.is_error and out.content.startswith("exit code: 0\n")
    assert len(out.content.encode()) < 2 * MAX_STREAM_BYTES + 1024
    stdout, stderr = out.content.split("--- stderr ---")
    assert "out line 0\n" in stdout and "last-out" in stdout and "err line" not in stdout
    assert "err line 0\n" in stderr and "last-err" in stderr
    total = sum(len(f"out line {i}\n") for i in range(20000)) + len("last-out\n")
    dropped = total - MAX_STREAM_BYTES
    assert f"[... {dropped} bytes of stdout dropped" in stdout
    assert "bytes of stderr dropped" in stderr


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext, sleeper: Sleeper) -> None:
    command = f"{sleeper.command} & {sleeper.wait}; echo started; wait"
    out = await call(execute_command, ctx, command=command, timeout=1)
    assert out.is_error and "started" in out.content
    assert out.content.startswith("timed out after 1 s")
    await wait_until(lambda: not sleeper.running())


async def test_background_process_holding_the_output_is_stopped(
    ctx: ToolContext, sleeper: Sleeper
) -> None:
    out = await call(
        execute_command, ctx, command=f"{sleeper.command} & {sleeper.wait}; echo started"
    )
    assert not out.is_error and "started" in out.content
    # confined, it ends with the sandbox at once; unconfined, after the grace period
    lingered = "background processes still holding the output" in out.content
    assert lingered is not confined(ctx)
    await wait_until(lambda: not sleeper.running())


async def test_detached_background_process(ctx: ToolContext, sleeper: Sleeper) -> None:
    """Unconfined, a detached process keeps running; confined, it ends with the command."""
    command = f"{sleeper.command} >/dev/null 2>&1 & {sleeper.wait}; echo started"
    out = await call(execute_command, ctx, command=command)
    assert "started" in out.content and "background processes" not in out.content
    if confined(ctx):
        await wait_until(lambda: not sleeper.running())
    else:
        assert sleeper.running()


async def test_cancellation_kills_the_group_and_propagates(
    ctx: ToolContext, work: Path, sleeper: Sleeper
) -> None:
    command = f"echo started > started.txt; {sleeper.command} & wait"
    task = asyncio.create_task(call(execute_command, ctx, command=command, timeout=600))
    await wait_until(lambda: (work / "started.txt").exists() and sleeper.running())
    shell = next(
        pid
        for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
        if alive(pid) and _is_shell_of(pid, command)
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # in the sandbox the shell dies with its PID namespace, a moment after bwrap itself
    await wait_until(lambda: not alive(shell))
    await wait_until(lambda: not sleeper.running())


def _is_shell_of(pid: int, command: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return argv[:3] == [b"/bin/sh", b"-c", command.encode()]


async def test_secrets_are_scrubbed_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, ctx: ToolContext
) -> None:
    monkeypatch.setenv("OPENHEIM_TEST_API_KEY", "sk-very-secret")
    monkeypatch.setenv("SERVICE_TOKEN", "tok-very-secret")
    monkeypatch.setenv("OPENHEIM_VISIBLE", "plain-value")
    ctx = dataclasses.replace(ctx, env=child_env())
    out = await call(execute_command, ctx, command="env")
    assert "OPENHEIM_VISIBLE=plain-value" in out.content
    assert "very-secret" not in out.content


async def test_argument_validation(ctx: ToolContext, work: Path) -> None:
    for timeout in (0, 3601):
        with pytest.raises(ToolError, match="timeout must be between 1 and 3600"):
            await call(execute_command, ctx, command="true", timeout=timeout)
    with pytest.raises(ToolError, match="command is empty"):
        await call(execute_command, ctx, command="  ")
    with pytest.raises(ToolError, match="command holds a NUL byte"):
        await call(execute_command, ctx, command="echo a\0b")
    with pytest.raises(ArgumentError, match="timeout"):
        await call(execute_command, ctx, command="true", timeout="soon")
    gone = work / "gone"
    gone.mkdir()
    stale = dataclasses.replace(ctx, cwd=gone)
    gone.rmdir()
    with pytest.raises(ToolError, match="could not start the command"):
        await call(execute_command, stale, command="true")


async def test_returns_even_when_a_grandchild_escapes_the_group(
    ctx: ToolContext, sleeper: Sleeper
) -> None:
    assert shutil.which("setsid") is not None, "these tests need setsid(1) (util-linux)"
    out = await call(
        execute_command,
        ctx,
        command=f"setsid {sleeper.command} & {sleeper.wait}; echo started",
        timeout=20,
    )
    assert out.content.startswith("exit code: 0\n") and "timed out" not in out.content
    assert "started" in out.content
    if confined(ctx):  # a new session is no way out of the sandbox's PID namespace
        assert "background processes" not in out.content
        await wait_until(lambda: not sleeper.running())
    else:
        assert "background processes still holding the output" in out.content
        assert sleeper.running()
