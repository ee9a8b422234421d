"""execute_command: output, exit codes, caps, timeouts, cancellation, environment."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolOutput
from openheim.tools.builtin.shell import MAX_STREAM_BYTES, execute_command
from openheim.tools.env import child_env


async def run(ctx: ToolContext, **args: Any) -> ToolOutput:
    return await execute_command.call(execute_command.parse(args), ctx)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purposes
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split()[2] != "Z"


async def wait_for_file(path: Path, seconds: float = 10) -> str:
    """Poll until a file has content (bounded), for handshakes with child processes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def test_output_and_exit_codes(ctx: ToolContext) -> None:
    ok = await run(ctx, command="echo out; echo err >&2")
    assert not ok.is_error
    assert ok.content == "exit code: 0\n--- stdout ---\nout\n\n--- stderr ---\nerr\n"
    bad = await run(ctx, command="exit 3")
    assert bad.is_error and bad.content.startswith("exit code: 3")


async def test_runs_in_the_session_cwd(ctx: ToolContext, tmp_path: Path) -> None:
    out = await run(ctx, command="pwd")
    assert str(tmp_path.resolve()) in out.content


async def test_stdin_is_detached(ctx: ToolContext) -> None:
    out = await run(ctx, command="cat; echo done", timeout=10)
    assert "done" in out.content and not out.is_error


async def test_output_is_capped(ctx: ToolContext) -> None:
    out = await run(ctx, command="head -c 200000 /dev/zero | tr '\\0' a")
    body = out.content.split("--- stdout ---\n", 1)[1]
    assert body.count("a") == MAX_STREAM_BYTES
    assert f"[{200000 - MAX_STREAM_BYTES} more bytes of stdout not shown]" in body


async def test_timeout_kills_the_whole_group(ctx: ToolContext, tmp_path: Path) -> None:
    out = await run(ctx, command="sleep 1000 & echo $!; wait", timeout=1)
    assert out.is_error and out.content.startswith("timed out after 1 s")
    grandchild = int(out.content.split("--- stdout ---\n")[1].split()[0])
    assert not alive(grandchild)


async def test_cancel_kills_the_whole_group(ctx: ToolContext, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    task = asyncio.create_task(
        run(ctx, command=f"sleep 1000 & echo $! > {marker}; wait", timeout=600)
    )
    grandchild = int(await wait_for_file(marker))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(grandchild)


async def test_secrets_are_not_in_the_environment(tmp_path: Path) -> None:
    from openheim.tools.sandbox import PathSandbox

    env = child_env({"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-x", "HOME": "/h"})
    ctx = ToolContext(PathSandbox(tmp_path), tmp_path.resolve(), env)
    out = await run(ctx, command="env")
    assert "OPENAI_API_KEY" not in out.content and "HOME=/h" in out.content


async def test_bad_timeout(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="timeout must be"):
        await run(ctx, command="true", timeout=0)
