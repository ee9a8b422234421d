"""A session's read-only mode, its model and its folder (``cwd``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.approval import ApprovalRequest
from openheim.errors import ConfigError
from openheim.testing import Reply, tool_call
from tests.api.conftest import MODEL, MakeRuntime, Scripted
from tests.api.support import MUTATING, add, read_only, results, touch, write_call

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
