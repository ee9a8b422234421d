"""Hooks in a session: every event fires with its payload, pre_tool and user_prompt decide,
and a failing or slow hook is a warning (a required pre_tool hook fails closed)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openheim.approval import ApprovalRequest
from openheim.config.schema import HookEntry
from openheim.events import Event, Notice
from openheim.testing import Reply, tool_call
from tests.api.conftest import MakeRuntime, Scripted
from tests.api.support import finished, results

RECORDER = """
import json, os, sys
payload = json.load(sys.stdin)
env = {k: v for k, v in os.environ.items() if k.startswith("OPENHEIM_HOOK_")}
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"payload": payload, "env": env}) + "\\n")
if len(sys.argv) > 2:
    print(sys.argv[2])
"""


def recorder(tmp_path: Path, reply: dict[str, Any] | None = None) -> tuple[str, Path]:
    """A hook command that appends its payload and ``OPENHEIM_HOOK_*`` variables to a log
    (and prints ``reply``), and the log's path."""
    script, log = tmp_path / "record.py", tmp_path / "hooks.jsonl"
    script.write_text(RECORDER)
    extra = f" '{json.dumps(reply)}'" if reply is not None else ""
    return f"{sys.executable} {script} {log}{extra}", log


def logged(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def hooked(make_runtime: MakeRuntime, hooks: dict[str, HookEntry], **kw: Any) -> Any:
    base = make_runtime(**kw).settings
    return make_runtime(settings=dataclasses.replace(base, hooks=hooks), **kw)


def warnings(events: list[Event]) -> list[str]:
    """The hooks' warnings among the events (not other notices)."""
    return [
        e.message
        for e in events
        if isinstance(e, Notice) and e.level == "warning" and " hook " in e.message
    ]


def write_note() -> Reply:
    return Reply(tool_calls=[tool_call("write_file", {"path": "note.txt", "content": "hi"})])


async def test_every_event_fires_with_its_payload(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    command, log = recorder(tmp_path)
    events = ("session_start", "user_prompt", "pre_tool", "post_tool", "file_write", "stop")
    hooks = {event: HookEntry(command) for event in (*events, "session_end")}
    scripted.provider.add(write_note(), "written")
    runtime = hooked(make_runtime, hooks, approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("write a note")
        assert [e["payload"]["event"] for e in logged(log)] == [
            "session_start", "user_prompt", "pre_tool", "file_write", "post_tool", "stop",
        ]  # fmt: skip
    records = {e["payload"]["event"]: e for e in logged(log)}
    assert list(records)[-1] == "session_end"
    assert warnings(result.events) == []
    for record in records.values():
        payload, env = record["payload"], record["env"]
        assert (payload["session_id"], payload["cwd"]) == (session.id, str(work))
        assert env["OPENHEIM_HOOK_EVENT"] == payload["event"]
        assert env["OPENHEIM_HOOK_SESSION_ID"] == session.id
        assert env["OPENHEIM_HOOK_CWD"] == str(work)
    assert records["session_start"]["payload"]["resumed"] is False
    assert records["user_prompt"]["payload"]["prompt"] == "write a note"
    pre = records["pre_tool"]
    assert (
        pre["payload"]["tool"] == "write_file" and pre["env"]["OPENHEIM_HOOK_TOOL"] == "write_file"
    )
    assert pre["payload"]["arguments"] == {"path": "note.txt", "content": "hi"}
    post = records["post_tool"]["payload"]
    assert (post["tool"], post["status"]) == ("write_file", "completed")
    assert post["result"]["is_error"] is False and "note.txt" in post["result"]["content"]
    wrote = records["file_write"]
    assert wrote["payload"]["path"] == str(work / "note.txt")
    assert wrote["env"]["OPENHEIM_HOOK_PATH"] == str(work / "note.txt")
    stop = records["stop"]["payload"]
    assert (stop["stop_reason"], stop["text"]) == ("end_turn", "written")


async def test_pre_tool_deny_reaches_the_model_and_nothing_runs(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    command, _ = recorder(tmp_path, {"decision": "deny", "reason": "no writes on Fridays"})
    scripted.provider.add(write_note(), "ok")
    runtime = hooked(make_runtime, {"pre_tool": HookEntry(command)}, approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    [denied] = results(result.events)
    assert denied.status == "denied"
    assert denied.content == "denied: blocked by the pre_tool hook: no writes on Fridays"
    assert not (work / "note.txt").exists()


async def test_exit_status_2_denies_with_stderr_as_the_reason(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    hook = HookEntry("echo 'protected file' >&2; exit 2")
    scripted.provider.add(write_note(), "ok")
    runtime = hooked(make_runtime, {"pre_tool": hook})
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    assert results(result.events)[0].content.endswith("pre_tool hook: protected file")
    assert not (work / "note.txt").exists()


async def test_pre_tool_ask_and_allow_override_the_mode(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    ask, _ = recorder(tmp_path, {"decision": "ask", "reason": "looks odd"})
    scripted.provider.add(write_note(), "ok")
    async with await hooked(
        make_runtime, {"pre_tool": HookEntry(ask)}, approval=callback
    ).new_session() as session:
        await session.prompt("write")
    assert [r.tool for r in asked] == ["write_file"]
    assert not (work / "note.txt").exists()

    allow, _ = recorder(tmp_path, {"decision": "allow"})
    scripted.provider.add(write_note(), "ok")
    runtime = hooked(make_runtime, {"pre_tool": HookEntry(allow)}, approval="ask")
    async with await runtime.new_session() as session:  # no one to ask: the hook allows
        await session.prompt("write")
    assert (work / "note.txt").read_text() == "hi"


async def test_policy_denial_wins_over_a_hook_that_allows(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    command, log = recorder(tmp_path, {"decision": "allow"})
    scripted.provider.add(write_note(), "ok")
    runtime = hooked(make_runtime, {"pre_tool": HookEntry(command)}, approval="deny")
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    assert results(result.events)[0].status == "denied"
    assert logged(log) == [] and not (work / "note.txt").exists()


async def test_user_prompt_blocks_or_rewrites(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    block, _ = recorder(tmp_path, {"decision": "block", "reason": "no secrets here"})
    runtime = hooked(make_runtime, {"user_prompt": HookEntry(block)})
    async with await runtime.new_session() as session:
        result = await session.prompt("my password is hunter2")
        assert session.history == []
    end = finished(result.events)
    assert (end.stop_reason, end.reason, end.text) == (
        "refusal",
        "prompt_blocked",
        "no secrets here",
    )
    assert any("blocked this prompt: no secrets here" in w for w in warnings(result.events))
    assert scripted.requests == []

    rewrite, _ = recorder(tmp_path, {"prompt": "rewritten prompt"})
    scripted.provider.add("answer")
    runtime = hooked(make_runtime, {"user_prompt": HookEntry(rewrite)})
    async with await runtime.new_session() as session:
        await session.prompt("original prompt")
    assert scripted.requests[-1].messages[-1].text == "rewritten prompt"


async def test_a_slow_hook_is_killed_and_warned_about(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(write_note(), "ok")
    slow = HookEntry("sleep 30", timeout=0.5)
    runtime = hooked(make_runtime, {"post_tool": slow}, approval="auto")
    started = time.monotonic()
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    assert time.monotonic() - started < 20
    assert finished(result.events).stop_reason == "end_turn"
    assert warnings(result.events) == [
        "the post_tool hook failed: it did not finish within 0.5 s and was killed"
    ]
    assert (work / "note.txt").read_text() == "hi"


async def test_a_required_pre_tool_hook_that_times_out_fails_closed(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(write_note(), "ok")
    hook = HookEntry("sleep 30", timeout=0.5, required=True)
    runtime = hooked(make_runtime, {"pre_tool": hook}, approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    [denied] = results(result.events)
    assert denied.status == "denied" and "required pre_tool hook failed" in denied.content
    assert not (work / "note.txt").exists()
    assert any("pre_tool hook failed" in w for w in warnings(result.events))


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("echo boom >&2; exit 1", "exited with status 1"),
        ("exit 3", "exited with status 3"),
        ("echo 'not json'", "not one JSON"),
        ("echo '[1, 2]'", "hook failed"),
        ('echo \'{"decision": "maybe"}\'', "hook failed"),
        ("exec /nonexistent/program", "exited with status"),
    ],
)
async def test_a_required_pre_tool_hook_that_fails_denies(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, command: str, problem: str
) -> None:
    """Not only a timeout: a required hook that fails in any way denies the call."""
    scripted.provider.add(write_note(), "ok")
    hook = HookEntry(command, required=True)
    runtime = hooked(make_runtime, {"pre_tool": hook}, approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    [denied] = results(result.events)
    assert denied.status == "denied" and "required pre_tool hook failed" in denied.content
    assert problem in denied.content
    assert not (work / "note.txt").exists()


async def test_crashing_hooks_are_warnings_and_the_session_goes_on(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(write_note(), "ok")
    hooks = {
        "pre_tool": HookEntry("echo boom >&2; exit 1"),
        "file_write": HookEntry("echo 'not json'"),
        "session_start": HookEntry("exec /nonexistent/program"),
    }
    runtime = hooked(make_runtime, hooks, approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("write")
    said = warnings(result.events)
    assert "the pre_tool hook failed: it exited with status 1: boom" in said
    assert any(w.startswith("the file_write hook failed: its stdout is not one JSON") for w in said)
    assert any(w.startswith("the session_start hook failed: it exited with status") for w in said)
    assert (work / "note.txt").read_text() == "hi"
    assert finished(result.events).stop_reason == "end_turn"


async def test_cancel_while_the_user_prompt_hook_runs_ends_the_prompt_at_once(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    hook = HookEntry(f"touch {started}; sleep 60", timeout=100)
    runtime = hooked(make_runtime, {"user_prompt": hook})
    async with await runtime.new_session() as session:
        run = asyncio.ensure_future(session.prompt("hello").result())
        for _ in range(3000):  # the hook has started: at most 30 s (a loaded machine)
            if started.exists():
                break
            await asyncio.sleep(0.01)
        assert started.exists()
        began = time.monotonic()
        session.cancel()
        result = await asyncio.wait_for(run, 10)
        assert time.monotonic() - began < 5
        assert session.history == []
    assert (result.stop_reason, result.reason) == ("cancelled", "user_cancelled")
    assert scripted.requests == []


async def test_hooks_get_the_scrubbed_child_environment(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "hunter2-deploy")
    monkeypatch.setenv("LANG", "C.UTF-8")
    dump = tmp_path / "env.txt"
    runtime = hooked(make_runtime, {"session_start": HookEntry(f"env > {dump}")})
    async with await runtime.new_session():
        pass
    names = {line.partition("=")[0] for line in dump.read_text().splitlines()}
    assert {"LANG", "PATH", "OPENHEIM_HOOK_EVENT"} <= names
    assert "DEPLOY_TOKEN" not in names and "hunter2" not in dump.read_text()
