"""What a hook starts ends with the hook: after its timeout, a cancel or a normal exit, the
processes left in its process group are killed, and one still holding the hook's output does
not keep the session waiting for the timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.config.schema import HookEntry
from openheim.runtime.hooks import HookReply, Hooks
from tests.api.test_hook_attacks import alive

CHILD = "sleep 300 & echo $! > {pid_file}"
"""A background child that holds the hook's stdout and stderr, its pid written down."""
STUBBORN = "sh -c 'trap \"\" TERM HUP INT; exec sleep 300' & echo $! > {pid_file}"
"""A background child that ignores the polite signals."""


def _gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` ended within ``seconds`` (polled, bounded)."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where a hook writes its child's pid; the child is killed after the test if it lives."""
    path = tmp_path / "child.pid"
    yield path
    if path.exists() and path.read_text().strip():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(path.read_text()), signal.SIGKILL)


def hooks(tmp_path: Path, command: str, timeout: float) -> Hooks:
    entry = HookEntry(command, timeout=timeout)
    return Hooks({"user_prompt": entry}, tmp_path, {"PATH": os.environ["PATH"]})


async def _pid_written(pid_file: Path) -> int:
    for _ in range(500):  # bounded: 10 s
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError("the hook never wrote its child's pid")


@pytest.mark.parametrize("child", [CHILD, STUBBORN], ids=["child", "ignores-sigterm"])
async def test_a_hooks_child_ends_at_its_timeout(
    tmp_path: Path, pid_file: Path, child: str
) -> None:
    command = child.format(pid_file=pid_file) + "; wait"
    reply = await hooks(tmp_path, command, 1).run("user_prompt", prompt="hi")
    assert reply == HookReply(problem="it did not finish within 1 s and was killed")
    assert _gone_within(int(pid_file.read_text()), 5)


async def test_a_hooks_child_ends_when_the_hook_is_cancelled(
    tmp_path: Path, pid_file: Path
) -> None:
    command = CHILD.format(pid_file=pid_file) + "; wait"
    running = asyncio.ensure_future(hooks(tmp_path, command, 60).run("user_prompt", prompt="x"))
    pid = await _pid_written(pid_file)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert _gone_within(pid, 5)


@pytest.mark.parametrize("child", [CHILD, STUBBORN], ids=["child", "ignores-sigterm"])
async def test_a_child_holding_the_output_ends_soon_after_the_hook_exits(
    tmp_path: Path, pid_file: Path, child: str
) -> None:
    command = child.format(pid_file=pid_file) + '; echo \'{"reason": "fine"}\'; exit 0'
    started = time.monotonic()
    reply = await hooks(tmp_path, command, 30).run("user_prompt", prompt="hi")
    took = time.monotonic() - started
    assert reply == HookReply(reason="fine")
    assert took < 5, f"the hook's run took {took:.1f} s"
    assert _gone_within(int(pid_file.read_text()), 5)
