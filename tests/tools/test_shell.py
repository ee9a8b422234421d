from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openheim.child_env import child_env
from openheim.errors import ArgumentError, ToolError
from openheim.tools.base import ToolContext
from openheim.tools.builtin.shell import MAX_STREAM_BYTES, execute_command
from openheim.tools.sandbox import PathSandbox
from tests.tools.support import call


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped by someone else counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def wait_until(condition: Callable[[], bool], limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_output_exit_code_and_cwd(ctx: ToolContext, work: Path) -> None:
    (work / "sub").mkdir()
    sub = ToolContext(ctx.sandbox, work / "sub", ctx.env)
    out = await call(execute_command, sub, command="pwd; echo oops >&2")
    assert not out.is_error
    assert out.content == f"exit code: 0\n--- stdout ---\n{work}/sub\n--- stderr ---\noops"


async def test_nonzero_exit_and_signals_are_errors(ctx: ToolContext) -> None:
    out = await call(execute_command, ctx, command="echo partial; exit 3")
    assert out.is_error and out.content.startswith("exit code: 3\n--- stdout ---\npartial\n")
    assert out.content.endswith("--- stderr ---\n(empty)")
    killed = await call(execute_command, ctx, command="kill -9 $$")
    assert killed.is_error and killed.content.startswith("exit code: -9 (killed by SIGKILL)")


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


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext) -> None:
    out = await call(execute_command, ctx, command="sleep 1000 & echo $!; wait", timeout=1)
    assert out.is_error
    assert out.content.startswith("timed out after 1 s")
    grandchild = int(out.content.split("--- stdout ---\n")[1].split("\n")[0])
    await wait_until(lambda: not alive(grandchild))  # killed; the kernel may still be ending it


async def test_background_process_holding_the_output_is_stopped(ctx: ToolContext) -> None:
    out = await call(execute_command, ctx, command="sleep 1000 & echo $!")
    grandchild = int(out.content.split("--- stdout ---\n")[1].split("\n")[0])
    assert not out.is_error and "background processes still holding the output" in out.content
    await wait_until(lambda: not alive(grandchild))


async def test_detached_background_process_keeps_running(ctx: ToolContext, work: Path) -> None:
    out = await call(execute_command, ctx, command="sleep 1000 >/dev/null 2>&1 & echo $!")
    pid = int(out.content.split("--- stdout ---\n")[1].split("\n")[0])
    try:
        assert "background processes" not in out.content
        assert alive(pid)
    finally:
        os.kill(pid, 9)


async def test_cancellation_kills_the_group_and_propagates(ctx: ToolContext, work: Path) -> None:
    command = "echo $$ > shell.pid; sleep 1000 & echo $! > child.pid; wait"
    task = asyncio.create_task(call(execute_command, ctx, command=command, timeout=600))
    pid_file = work / "child.pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().endswith("\n"))
    shell, grandchild = int((work / "shell.pid").read_text()), int(pid_file.read_text())
    assert alive(shell) and alive(grandchild)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(shell)
    await wait_until(lambda: not alive(grandchild))


async def test_secrets_are_scrubbed_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENHEIM_TEST_API_KEY", "sk-very-secret")
    monkeypatch.setenv("SERVICE_TOKEN", "tok-very-secret")
    monkeypatch.setenv("OPENHEIM_VISIBLE", "plain-value")
    ctx = ToolContext(PathSandbox(tmp_path), tmp_path.resolve(), child_env())
    out = await call(execute_command, ctx, command="env")
    assert "OPENHEIM_VISIBLE=plain-value" in out.content
    assert "very-secret" not in out.content


async def test_argument_validation(ctx: ToolContext, work: Path) -> None:
    for timeout in (0, 3601):
        with pytest.raises(ToolError, match="timeout must be between 1 and 3600"):
            await call(execute_command, ctx, command="true", timeout=timeout)
    with pytest.raises(ToolError, match="command is empty"):
        await call(execute_command, ctx, command="  ")
    with pytest.raises(ArgumentError, match="timeout"):
        await call(execute_command, ctx, command="true", timeout="soon")
    gone = work / "gone"
    gone.mkdir()
    stale = ToolContext(ctx.sandbox, gone, ctx.env)
    gone.rmdir()
    with pytest.raises(ToolError, match="could not start the command"):
        await call(execute_command, stale, command="true")


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid(1)")
async def test_returns_even_when_a_grandchild_escapes_the_group(ctx: ToolContext) -> None:
    """Waiting for the escaped grandchild to let go of the output would end in the timeout."""
    out = await call(execute_command, ctx, command="setsid sleep 1000 & echo $!", timeout=20)
    escaped = int(out.content.split("--- stdout ---\n")[1].split("\n")[0])
    try:
        assert out.content.startswith("exit code: 0\n") and "timed out" not in out.content
        assert "background processes still holding the output" in out.content
    finally:
        os.kill(escaped, 9)
