"""``Session`` and ``PromptRun``: prompting, tools, cancellation, approval, persistence,
mode and model switches and session folders (closing and crossing tasks: test_lifetime.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from openheim.api import PromptResult, PromptRun
from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.errors import ConfigError
from openheim.events import Event, IterationStart, Notice, SessionStarted, TextDelta, ToolCall
from openheim.messages import Message, ToolResultBlock, Usage
from openheim.store import SessionBusy, SessionNotFound
from openheim.testing import Reply, tool_call
from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool
from tests.api.conftest import MODEL, Blocker, MakeRuntime, Scripted
from tests.api.support import MUTATING, busy, finished, read_only, results, soon, tool_answer


@tool(read_only=True)
def add(a: int, b: int) -> str:
    """Add two whole numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return str(a + b)


@tool
def touch(name: str, ctx: ToolContext) -> str:
    """Create an empty file in the session's folder.

    Args:
        name: The file name.
    """
    target = ctx.path(name, write=True)
    target.write_text("")
    return f"touched {target}"


# --- prompting --------------------------------------------------------------------------------


async def test_iterating_a_prompt_yields_events_ending_with_finished(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(Reply(chunks=["Hel", "lo"], usage=Usage(7, 3)), "again")
    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        assert isinstance(run, PromptRun)
        assert scripted.requests == []  # nothing runs before the run is iterated
        events = [event async for event in run]
        again = [event async for event in session.prompt("and again")]
    started = events[0]
    assert isinstance(started, SessionStarted)  # the first prompt says which session runs
    assert (started.session_id, started.model, started.messages) == (session.id, MODEL, 0)
    assert not started.resumed
    assert [type(e) for e in events[1:3]] == [Notice, IterationStart]  # system.md is missing
    assert isinstance(again[0], IterationStart)  # later prompts: their own events only
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    done = finished(events)
    assert (done.stop_reason, done.text, done.usage) == ("end_turn", "Hello", Usage(7, 3))
    request = scripted.requests[0]
    assert request.model == MODEL
    assert request.messages[-1] == Message.user("hi")
    scripted.provider.assert_done()


async def test_awaiting_a_prompt_returns_its_result(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("add", {"a": 2, "b": 3})], usage=Usage(10, 4)),
        Reply("The sum is 5.", usage=Usage(20, 6)),
    )
    async with await make_runtime(tools=[add]).new_session() as session:
        result = await session.prompt("what is 2 + 3?")
        history = list(session.history)
    assert isinstance(result, PromptResult)
    assert (result.text, result.stop_reason, result.reason) == (
        "The sum is 5.",
        "end_turn",
        "end_turn",
    )
    assert result.usage == Usage(30, 10)
    done = finished(result.events)
    assert (done.text, done.usage) == (result.text, result.usage)
    assert [r.content for r in results(result.events)] == ["5"]
    assert history[0] == Message.user("what is 2 + 3?")
    assert history[-1] == Message.assistant("The sum is 5.")


async def test_result_method_matches_awaiting(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("one", "two")
    async with await make_runtime().new_session() as session:
        first = await session.prompt("a").result()
        second = await session.prompt(Message.user("b"))
    assert (first.text, second.text) == ("one", "two")
    assert scripted.requests[1].messages[-1] == Message.user("b")
    assert len(scripted.requests[1].messages) == 3  # a, one, b: the history carries over


async def test_a_prompt_run_runs_once(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    scripted.provider.add("only once")
    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        assert (await run).text == "only once"
        with pytest.raises(RuntimeError, match="runs once"):
            await run
        with pytest.raises(RuntimeError, match="runs once"):
            [event async for event in run]
        assert not busy(session)
        assert len(session.history) == 2
    assert len(scripted.requests) == 1


async def test_a_second_concurrent_prompt_is_refused(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("block", {"label": "one"})]), "first done", "second done"
    )
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        first = asyncio.create_task(session.prompt("one").result())
        await soon(blocker.started.wait())
        assert busy(session)
        before = list(session.history)
        with pytest.raises(SessionBusy) as refused:
            await session.prompt("two")
        assert refused.value.session_id == session.id
        assert session.history == before  # the refused prompt left no trace
        assert busy(session)  # and did not release the running one
        blocker.release.set()
        assert (await soon(first)).text == "first done"
        assert not busy(session)
        assert (await session.prompt("two")).text == "second done"
    assert blocker.finished == ["one"]


async def test_custom_tools_are_offered_and_their_results_reach_the_model(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    call = tool_call("add", {"a": 40, "b": 2})
    scripted.provider.add(Reply(tool_calls=[call]), "42")
    runtime = make_runtime(tools=[add])
    async with await runtime.new_session() as session:
        result = await session.prompt("add")
    specs = {spec.name: spec for spec in scripted.requests[0].tools}
    assert "add" in specs
    assert specs["add"].description == "Add two whole numbers."
    params = specs["add"].parameters
    assert set(params["properties"]) == {"a", "b"}
    assert params["properties"]["a"]["type"] == "integer"
    assert tool_answer(scripted.requests[1].messages[-1]) == ToolResultBlock(call.id, "42", False)
    assert [(r.name, r.status) for r in results(result.events)] == [("add", "completed")]


async def test_add_tool_offers_it_to_sessions_opened_later(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("before", "after")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    runtime.add_tool(add)
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    assert "add" not in scripted.tool_names(0)
    assert "add" in scripted.tool_names(1)


async def test_a_mutating_custom_tool_runs_in_auto_mode(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("touch", {"name": "made.txt"})]), "ok")
    runtime = make_runtime(tools=[touch], approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("touch")
    assert [r.status for r in results(result.events)] == ["completed"]
    assert (work / "made.txt").is_file()


async def test_a_mutating_tool_without_anyone_to_ask_is_denied(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("touch", {"name": "made.txt"})]), "ok")
    async with await make_runtime(tools=[touch]).new_session() as session:
        result = await session.prompt("touch")
    assert [r.status for r in results(result.events)] == ["denied"]
    assert finished(result.events).denied == 1
    assert not (work / "made.txt").exists()


# --- cancel -----------------------------------------------------------------------------------


async def test_cancel_ends_a_running_prompt(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    call = tool_call("block", {"label": "stuck"})
    scripted.provider.add(Reply(tool_calls=[call]), "after cancel")
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        run = asyncio.create_task(session.prompt("go").result())
        await soon(blocker.started.wait())
        session.cancel()
        result = await soon(run)
        assert (result.stop_reason, result.reason) == ("cancelled", "user_cancelled")
        assert blocker.cancelled == ["stuck"]
        assert blocker.finished == []
        assert [r.status for r in results(result.events)] == ["cancelled"]
        assert not busy(session)
        # the history stays valid: every call has its answer, and the session goes on
        assert tool_answer(session.history[-1]).tool_use_id == call.id
        assert (await session.prompt("again")).text == "after cancel"
    assert len(scripted.requests) == 2


async def test_cancel_while_iterating(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    seen: list[Event] = []
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        async for event in session.prompt("go"):
            seen.append(event)
            if isinstance(event, ToolCall):
                session.cancel()
    assert finished(seen).stop_reason == "cancelled"
    assert not blocker.finished


async def test_cancel_without_a_running_prompt_does_nothing(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("fine")
    async with await make_runtime().new_session() as session:
        session.cancel()
        result = await session.prompt("hi")
    assert result.stop_reason == "end_turn"


async def test_prompt_run_cancel_ends_only_that_run(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        run = session.prompt("go")
        task = asyncio.create_task(run.result())
        await soon(blocker.started.wait())
        run.cancel()
        assert (await soon(task)).stop_reason == "cancelled"
    assert blocker.cancelled == ["x"]


async def test_a_run_cancelled_before_it_starts_never_calls_the_model(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("unused")
    async with await make_runtime().new_session() as session:
        run = session.prompt("go")
        run.cancel()
        result = await soon(run)
        assert result.stop_reason == "cancelled"
        assert not busy(session)
    assert scripted.requests == []


# --- approval callbacks -----------------------------------------------------------------------


def write_call(path: str = "note.txt", content: str = "hello") -> Reply:
    return Reply(tool_calls=[tool_call("write_file", {"path": path, "content": content})])


@pytest.mark.parametrize("style", ["sync", "async"])
@pytest.mark.parametrize("answer", [True, False])
async def test_approval_callback_decides_mutating_calls(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, style: str, answer: bool
) -> None:
    asked: list[ApprovalRequest] = []

    def sync_callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    async def async_callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    callback: Any = sync_callback if style == "sync" else async_callback
    scripted.provider.add(write_call(), "done")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("write")
    assert len(asked) == 1
    request = asked[0]
    assert (request.tool, dict(request.arguments)) == (
        "write_file",
        {"path": "note.txt", "content": "hello"},
    )
    assert not request.read_only
    assert Path(request.cwd) == work
    (outcome,) = results(result.events)
    if answer:
        assert outcome.status == "completed"
        assert (work / "note.txt").read_text() == "hello"
        assert finished(result.events).denied == 0
    else:
        assert outcome.status == "denied"
        assert outcome.content.startswith("denied")
        assert not (work / "note.txt").exists()
        assert finished(result.events).denied == 1
        assert tool_answer(scripted.requests[1].messages[-1]).is_error


async def test_approval_callback_may_answer_allow_or_deny_with_a_reason(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    def callback(request: ApprovalRequest) -> Allow | Deny:
        if request.arguments["path"] == "ok.txt":
            return Allow()
        return Deny("not that file, use ok.txt")

    scripted.provider.add(write_call("bad.txt"), write_call("ok.txt"), "done")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("write")
    refused, written = results(result.events)
    assert refused.status == "denied"
    assert "not that file, use ok.txt" in refused.content
    assert "not that file" in tool_answer(scripted.requests[1].messages[-1]).content
    assert written.status == "completed"
    assert (work / "ok.txt").is_file()
    assert not (work / "bad.txt").exists()


async def test_approval_callback_sees_why_a_call_is_risky(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    risky = tool_call("execute_command", {"command": "git push --force"})
    scripted.provider.add(Reply(tool_calls=[risky]), "refused")
    runtime = make_runtime(approval=callback, allow_shell=True)
    async with await runtime.new_session() as session:
        await session.prompt("clean up")
    assert len(asked) == 1 and asked[0].tool == "execute_command"
    assert asked[0].reasons == ("`git push --force` can overwrite commits on the remote",)


async def test_approval_callback_is_not_asked_about_read_only_tools(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    (work / "a.txt").write_text("content of a")
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    scripted.provider.add(Reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})]), "ok")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("read")
    assert asked == []
    (outcome,) = results(result.events)
    assert outcome.status == "completed"
    assert "content of a" in outcome.content


async def test_a_session_resolver_replaces_the_runtime_callback(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    by_callback: list[str] = []
    by_resolver: list[str] = []

    def callback(request: ApprovalRequest) -> bool:
        by_callback.append(request.tool)
        return False

    async def resolver(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        by_resolver.append(request.tool)
        return Allow()

    scripted.provider.add(write_call(), "ok")
    runtime = make_runtime(approval=callback)
    async with await runtime.new_session(resolver=resolver) as session:
        await session.prompt("write")
    assert (by_callback, by_resolver) == ([], ["write_file"])
    assert (work / "note.txt").is_file()


# --- persistence ------------------------------------------------------------------------------


async def test_sessions_are_stored_listed_and_resumed(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    scripted.provider.add("first answer", "second answer")
    runtime = make_runtime()
    session = await runtime.new_session()
    assert session.id is not None
    await session.prompt("remember this")
    history = list(session.history)
    await session.close()

    listed = runtime.list_sessions()
    assert [record.id for record in listed] == [session.id]
    record = listed[0]
    assert (record.cwd, record.model, record.message_count) == (str(work), MODEL, 2)
    assert [r.id for r in runtime.list_sessions(cwd=work)] == [session.id]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert runtime.list_sessions(cwd=elsewhere) == []

    async with await runtime.resume_session(session.id) as resumed:
        assert resumed.id == session.id
        assert resumed.history == history
        assert resumed.model == MODEL
        await resumed.prompt("go on")
    assert scripted.requests[1].messages[:2] == tuple(history)


async def test_resume_by_unique_prefix(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    scripted.provider.add("answer")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    assert session.id is not None
    async with await runtime.resume_session(session.id[:8]) as resumed:
        assert resumed.id == session.id
        assert len(resumed.history) == 2


async def test_a_fresh_runtime_on_the_same_data_dir_resumes(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("stored")
    async with await make_runtime().new_session() as session:
        await session.prompt("hi")
    assert session.id is not None
    other = make_runtime()
    assert [r.id for r in other.list_sessions()] == [session.id]
    async with await other.resume_session(session.id) as resumed:
        assert resumed.history[-1] == Message.assistant("stored")


async def test_list_sessions_pages_newest_first(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    ids = []
    for n in range(3):
        scripted.provider.add(f"answer {n}")
        async with await runtime.new_session() as session:
            await session.prompt(f"prompt {n}")
        ids.append(session.id)
    newest = runtime.list_sessions(limit=2)
    assert [r.id for r in newest] == ids[::-1][:2]
    rest = runtime.list_sessions(before=newest[-1].updated_at)
    assert [r.id for r in rest] == ids[:1]


async def test_unsaved_sessions_have_no_id_and_are_not_listed(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("not stored")
    runtime = make_runtime(save_sessions=False)
    async with await runtime.new_session() as session:
        assert session.id is None
        assert (await session.prompt("hi")).text == "not stored"
        assert len(session.history) == 2
    assert runtime.list_sessions() == []
    with pytest.raises(ConfigError, match="session saving"):
        await runtime.resume_session("anything")


async def test_resuming_an_unknown_session_fails(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("stored")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    with pytest.raises(SessionNotFound):
        await runtime.resume_session("deadbeef-not-a-session")
    assert [r.id for r in runtime.list_sessions()] == [session.id]


# --- mode and model ---------------------------------------------------------------------------


async def test_read_only_mode_hides_mutating_tools_until_turned_off(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("full", "planning", "full again")
    async with await make_runtime(tools=[add, touch]).new_session() as session:
        assert not read_only(session)
        await session.prompt("1")
        session.set_read_only(True)
        assert read_only(session)
        await session.prompt("2")
        session.set_read_only(False)
        assert not read_only(session)
        await session.prompt("3")
    full, planning, again = (set(scripted.tool_names(i)) for i in range(3))
    assert {*MUTATING, "touch", "add", "read_file"} <= full
    assert not planning & {*MUTATING, "touch"}
    assert {"add", "read_file", "search"} <= planning
    assert again == full


async def test_a_read_only_session_refuses_a_hidden_tool(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(write_call(), "ok")
    async with await make_runtime(approval="auto").new_session() as session:
        session.set_read_only(True)
        result = await session.prompt("write anyway")
    (outcome,) = results(result.events)
    assert outcome.status == "failed"
    assert not (work / "note.txt").exists()


async def test_set_model_applies_to_the_next_call_and_is_stored(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("from a", "from b")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("1")
        session.set_model("model-b")
        assert session.model == "model-b"
        await session.prompt("2")
    assert [r.model for r in scripted.requests] == [MODEL, "model-b"]
    assert session.id is not None
    assert runtime.list_sessions()[0].model == "model-b"
    async with await runtime.resume_session(session.id) as resumed:
        assert resumed.model == "model-b"


async def test_set_model_on_an_unsaved_session(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("b")
    async with await make_runtime(save_sessions=False).new_session() as session:
        session.set_model("model-b")
        await session.prompt("hi")
    assert scripted.requests[0].model == "model-b"


async def test_new_session_model_overrides_the_runtime_model(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("x")
    runtime = make_runtime()
    async with await runtime.new_session(model="model-c") as session:
        assert session.model == "model-c"
        await session.prompt("hi")
    assert scripted.requests[0].model == "model-c"
    assert runtime.list_sessions()[0].model == "model-c"


# --- the session's folder ---------------------------------------------------------------------


async def test_a_session_cwd_inside_work_dir_is_its_sandbox_root(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    sub = work / "pkg"
    sub.mkdir()
    scripted.provider.add(
        Reply(tool_calls=[tool_call("touch", {"name": "here.txt"})]),
        Reply(tool_calls=[tool_call("touch", {"name": "../escape.txt"})]),
        "done",
    )
    runtime = make_runtime(tools=[touch], approval="auto")
    async with await runtime.new_session(cwd=sub) as session:
        assert session.agent.context.cwd == sub
        assert session.agent.context.sandbox.root == sub
        result = await session.prompt("touch")
    inside, outside = results(result.events)
    assert inside.status == "completed"
    assert (sub / "here.txt").is_file()
    assert outside.status == "failed"
    assert not (work / "escape.txt").exists()
    assert runtime.list_sessions()[0].cwd == str(sub)
    assert [r.id for r in runtime.list_sessions(cwd=sub)] == [session.id]
    assert runtime.list_sessions(cwd=work) == []


async def test_a_relative_session_cwd(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "rel").mkdir()
    monkeypatch.chdir(work)
    runtime = make_runtime()
    async with await runtime.new_session(cwd="rel") as session:
        assert session.agent.context.cwd == work / "rel"


async def test_approval_requests_carry_the_session_cwd(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    sub = work / "pkg"
    sub.mkdir()
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    scripted.provider.add(write_call(), "ok")
    async with await make_runtime(approval=callback).new_session(cwd=sub) as session:
        await session.prompt("write")
    assert [Path(r.cwd) for r in asked] == [sub]
    assert (sub / "note.txt").read_text() == "hello"
    assert not (work / "note.txt").exists()


@pytest.mark.parametrize("where", ["outside", "missing", "file", "symlink"])
async def test_a_session_cwd_outside_work_dir_is_refused(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path, where: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    cwd = {
        "outside": outside,
        "missing": work / "missing",
        "file": work / "file.txt",
        "symlink": work / "link",
    }[where]
    (work / "file.txt").write_text("x")
    (work / "link").symlink_to(outside)
    runtime = make_runtime()
    with pytest.raises(ConfigError, match="not a folder inside"):
        await runtime.new_session(cwd=cwd)
    assert runtime.list_sessions() == []
    assert scripted.built == []  # refused before a provider was built
