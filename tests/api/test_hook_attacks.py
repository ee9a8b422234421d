"""Attacks on hooks: a model that makes the ``pre_tool`` hook unable to start or to read its
payload, a hook that floods its output, and a hook that leaves a process behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from openheim.config.schema import HookEntry
from openheim.testing import Reply, tool_call
from tests.api.conftest import MakeRuntime, Scripted
from tests.api.support import finished, results
from tests.api.test_hooks import hooked, logged, recorder, warnings

DENY_ALL = HookEntry("cat > /dev/null; echo 'nothing may be written' >&2; exit 2")

LONG_PATH = "./" * 70_000 + "long.txt"
"""A path the sandbox normalises to ``long.txt``, too long for an environment variable."""


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": LONG_PATH, "content": "x"},
        {"path": "note.txt", "content": "lone surrogate \ud800"},
        {"path": "note\nOPENHEIM_HOOK_TOOL=x.txt", "content": "x"},
    ],
    ids=["path-too-long-for-env", "lone-surrogate", "newline-in-path"],
)
async def test_a_model_cannot_get_past_a_pre_tool_hook_by_breaking_its_input(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, arguments: dict[str, str]
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("write_file", arguments)]), "ok")
    runtime = hooked(make_runtime, {"pre_tool": DENY_ALL}, approval="auto", save_sessions=False)
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    [denied] = results(result.events)
    assert denied.status == "denied", denied.content
    assert sorted(p.name for p in work.iterdir()) == []
    assert finished(result.events).stop_reason == "end_turn"


async def test_a_hook_flooding_its_output_is_stopped_at_the_bound(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("write_file", {"path": "n.txt", "content": "x"})]), "ok"
    )
    flood = HookEntry("yes", timeout=20, required=True)
    runtime = hooked(make_runtime, {"pre_tool": flood}, approval="auto")
    started = time.monotonic()
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    assert time.monotonic() - started < 30
    [denied] = results(result.events)
    assert denied.status == "denied" and "required pre_tool hook failed" in denied.content
    assert any("more than" in w and "bytes" in w for w in warnings(result.events))
    assert not (work / "n.txt").exists()


async def test_what_a_hook_leaves_running_is_killed_with_it(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    hook = HookEntry(f"sleep 300 >/dev/null 2>&1 & echo $! > {pid_file}; exit 0")
    scripted.provider.add("hello")
    runtime = hooked(make_runtime, {"user_prompt": hook}, approval="auto")
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    assert not alive(pid)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_a_path_with_a_newline_cannot_inject_hook_variables(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    name = "a\nOPENHEIM_HOOK_EVENT=pre_tool"
    command, log = recorder(tmp_path)
    args = {"path": name, "content": "x"}
    scripted.provider.add(Reply(tool_calls=[tool_call("write_file", args)]), "ok")
    runtime = hooked(make_runtime, {"file_write": HookEntry(command)}, approval="auto")
    async with await runtime.new_session() as session:
        await session.prompt("write")
    [record] = logged(log)
    assert record["env"]["OPENHEIM_HOOK_EVENT"] == "file_write"
    assert record["env"]["OPENHEIM_HOOK_PATH"] == str(work / name)
    assert record["payload"]["path"] == str(work / name)


async def test_a_hook_that_ignores_a_huge_payload_or_hides_its_end_cannot_stall_the_session(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    big = {"path": "big.txt", "content": "x" * 200_000}
    scripted.provider.add(Reply(tool_calls=[tool_call("write_file", big)]), "ok")
    hooks = {
        "pre_tool": HookEntry("exit 0"),  # never reads its 200 kB of stdin (over a pipe buffer)
        "post_tool": HookEntry("exec >&- 2>&-; sleep 300", timeout=1),  # closes its output
    }
    runtime = hooked(make_runtime, hooks, approval="auto", save_sessions=False)
    started = time.monotonic()
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    assert time.monotonic() - started < 20
    assert (work / "big.txt").stat().st_size == 200_000
    assert warnings(result.events) == [
        "the post_tool hook failed: it did not finish within 1 s and was killed"
    ]


@pytest.mark.parametrize("name", ["no\x00such_tool", "lone\ud800surrogate", "x" * 200_000])
async def test_a_tool_name_the_model_makes_up_cannot_break_the_post_tool_hook(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path, name: str
) -> None:
    command, log = recorder(tmp_path)
    scripted.provider.add(Reply(tool_calls=[tool_call(name, {})]), "ok")
    hooks = {"post_tool": HookEntry(command)}
    runtime = hooked(make_runtime, hooks, approval="auto", save_sessions=False)
    async with await runtime.new_session() as session:
        result = await session.prompt("call it")
    assert finished(result.events).stop_reason == "end_turn"
    [record] = logged(log)
    assert record["payload"]["tool"] == name
    assert record["env"]["OPENHEIM_HOOK_TOOL"] == ""


async def test_a_daemon_holding_the_hooks_output_cannot_hang_the_session(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    pid_file = tmp_path / "daemon.pid"
    hook = HookEntry(f"setsid sleep 300 & echo $! > {pid_file}; sleep 300", timeout=1)
    scripted.provider.add("hello")
    runtime = hooked(make_runtime, {"user_prompt": hook}, approval="auto", save_sessions=False)
    try:
        async with await runtime.new_session() as session:
            result = await asyncio.wait_for(session.prompt("hi"), 15)
    finally:
        if pid_file.exists():  # the daemon left the hook's process group: ours to end
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert finished(result.events).stop_reason == "end_turn"
    assert warnings(result.events) == [
        "the user_prompt hook failed: it did not finish within 1 s and was killed"
    ]
