"""Checkpoints and undo: the files the tools change in a turn are restored, the conversation is
rewound, and a file changed outside openheim since is refused unless forced."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.errors import UndoRefused
from openheim.messages import Message
from openheim.providers.base import ModelRequest
from openheim.runtime.checkpoints import CheckpointStore
from openheim.runtime.undo import turn_starts, undo_stored
from openheim.testing import Reply, tool_call
from tests.api.conftest import MakeRuntime, Scripted


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[tool_call("write_file", {"path": path, "content": content})])


def edit(path: str, old: str, new: str) -> Reply:
    args = {"path": path, "old_string": old, "new_string": new}
    return Reply(tool_calls=[tool_call("edit_file", args)])


def apply_staged(request: ModelRequest) -> Reply:
    """Apply the token that the previous preview call's result names."""
    text = str(request.messages[-1].content[0])
    found = re.search(r"token[^A-Za-z0-9]*([A-Za-z0-9_-]{6,})", text)
    assert found, text
    return Reply(tool_calls=[tool_call("apply_file_change", {"token": found.group(1)})])


async def three_turns(scripted: Scripted, make_runtime: MakeRuntime, work: Path) -> str:
    """Turn 1 creates a.txt and edits b.txt; turn 2 edits a.txt with edit_file; turn 3 stages
    and applies a change of b.txt and creates c.txt. Returns the session id."""
    (work / "b.txt").write_text("b original\n")
    runtime = make_runtime(approval="auto")
    staged = make_runtime(
        settings=dataclasses.replace(runtime.settings, file_changes="staged"), approval="auto"
    )
    scripted.provider.add(write("a.txt", "a one\n"), write("b.txt", "b one\n"), "turn 1 done")
    async with await runtime.new_session() as session:
        await session.prompt("first")
        assert session.id is not None
        session_id = session.id
    scripted.provider.add(edit("a.txt", "one", "two"), "turn 2 done")
    async with await runtime.resume_session(session_id) as session:
        await session.prompt("second")
    preview = {"path": "b.txt", "content": "b three\n"}
    scripted.provider.add(
        Reply(tool_calls=[tool_call("preview_write_file", preview)]),
        apply_staged,
        Reply(tool_calls=[tool_call("preview_write_file", {"path": "c.txt", "content": "c"})]),
        apply_staged,
        "turn 3 done",
    )
    async with await staged.resume_session(session_id) as session:
        await session.prompt("third")
    assert (work / "a.txt").read_text() == "a two\n"
    assert (work / "b.txt").read_text() == "b three\n"
    assert (work / "c.txt").read_text() == "c"
    return session_id


def prompts(home: Path, session_id: str) -> list[str]:
    messages = history(home, session_id)
    return [messages[i].text for i in turn_starts(messages)]


def history(home: Path, session_id: str) -> list[Message]:
    from openheim.store import open_store

    with open_store(home) as store:
        return store.messages(session_id)


async def test_three_turns_undone_one_at_a_time(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    session_id = await three_turns(scripted, make_runtime, work)
    assert len(CheckpointStore(home).list(session_id)) == 3
    assert len(turn_starts(history(home, session_id))) == 3

    _, report = undo_stored(home, session_id, "")
    assert (work / "b.txt").read_text() == "b one\n"
    assert not (work / "c.txt").exists()
    assert report.removed == (str(work / "c.txt"),)
    assert prompts(home, session_id) == ["first", "second"]

    undo_stored(home, session_id, "")
    assert (work / "a.txt").read_text() == "a one\n"
    assert prompts(home, session_id) == ["first"]

    undo_stored(home, session_id, "")
    assert not (work / "a.txt").exists()
    assert (work / "b.txt").read_text() == "b original\n"
    assert history(home, session_id) == []
    store = CheckpointStore(home)
    assert store.list(session_id) == []
    blobs = list((home / "checkpoints" / "blobs").glob("*/*"))
    assert blobs  # young blobs survive the prune that undo runs
    assert store.prune(min_age=0) == len(blobs)
    assert list((home / "checkpoints" / "blobs").glob("*/*")) == []
    with pytest.raises(UndoRefused, match="nothing to undo"):
        undo_stored(home, session_id, "")


async def test_three_turns_undone_at_once_then_the_session_goes_on(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    session_id = await three_turns(scripted, make_runtime, work)
    with pytest.raises(UndoRefused, match="fewer than the 4"):
        undo_stored(home, session_id, "", turns=4)
    _, report = undo_stored(home, session_id, "", turns=3)
    assert report.kept_messages == 0
    assert sorted(p.name for p in work.iterdir()) == ["b.txt"]
    assert (work / "b.txt").read_text() == "b original\n"
    scripted.provider.add("fresh start")
    async with await make_runtime().resume_session(session_id) as session:
        assert session.history == []
        await session.prompt("again")
    assert [m.text for m in history(home, session_id)] == ["again", "fresh start"]


async def test_a_file_changed_outside_openheim_is_refused_by_name(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    session_id = await three_turns(scripted, make_runtime, work)
    (work / "a.txt").write_text("edited by hand\n")
    (work / "c.txt").unlink()
    with pytest.raises(UndoRefused) as refused:
        undo_stored(home, session_id, "", turns=2)
    assert refused.value.paths == (str(work / "a.txt"), str(work / "c.txt"))
    assert "a.txt" in str(refused.value) and "--force" in str(refused.value)
    assert (work / "a.txt").read_text() == "edited by hand\n"  # nothing was touched
    assert (work / "b.txt").read_text() == "b three\n"
    assert len(turn_starts(history(home, session_id))) == 3
    # the last turn alone did not touch a.txt, yet c.txt was deleted since: refused too
    with pytest.raises(UndoRefused, match=r"c\.txt"):
        undo_stored(home, session_id, "")
    _, report = undo_stored(home, session_id, "", turns=2, force=True)
    assert (work / "a.txt").read_text() == "a one\n"
    assert (work / "b.txt").read_text() == "b one\n"
    assert str(work / "a.txt") in report.restored


async def test_binary_files_and_modes_are_restored(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    blob = bytes(range(256)) * 4
    (work / "data.bin").write_bytes(blob)
    (work / "data.bin").chmod(0o640)
    scripted.provider.add(write("data.bin", "now text"), "done")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("overwrite the binary file")
    assert (work / "data.bin").read_bytes() == b"now text"
    assert session.id is not None
    undo_stored(home, session.id, "")
    assert (work / "data.bin").read_bytes() == blob
    assert (work / "data.bin").stat().st_mode & 0o777 == 0o640


async def test_a_file_deleted_since_the_turn_is_refused_then_forced_back(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    (work / "keep.txt").write_text("precious\n")
    scripted.provider.add(write("keep.txt", "overwritten\n"), "done")
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt(f"overwrite, my key is {key}")
    assert session.id is not None
    [manifest] = (home / "checkpoints" / session.id).glob("*.json")
    assert key not in manifest.read_text() and "overwrite, my key is" in manifest.read_text()
    (work / "keep.txt").unlink()
    with pytest.raises(UndoRefused, match=r"keep\.txt"):
        undo_stored(home, session.id, "")
    undo_stored(home, session.id, "", force=True)
    assert (work / "keep.txt").read_text() == "precious\n"


async def test_a_turn_without_file_changes_is_undone_in_the_conversation_only(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    scripted.provider.add(write("x.txt", "x"), "wrote", "just talk")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("write")
        await session.prompt("talk")
    assert session.id is not None
    _, report = undo_stored(home, session.id, "")
    assert (report.restored, report.removed) == ((), ())
    assert (work / "x.txt").read_text() == "x"
    assert [m.text for m in history(home, session.id)][-1] == "wrote"


async def test_shell_changes_are_reported_not_restored(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    command = {"command": "echo made > shell.txt"}
    scripted.provider.add(
        Reply(tool_calls=[tool_call("execute_command", command)]), write("t.txt", "t"), "done"
    )
    runtime: Runtime = make_runtime(approval="auto", allow_shell=True)
    async with await runtime.new_session() as session:
        result = await session.prompt("run it")
    notes = [getattr(e, "message", "") for e in result.events if e.type == "notice"]
    assert any("shell.txt" in n and "undo cannot restore" in n for n in notes), notes
    assert session.id is not None
    _, report = undo_stored(home, session.id, "")
    assert report.shell_changed == (str(work / "shell.txt"),)
    assert (work / "shell.txt").exists() and not (work / "t.txt").exists()
    assert "not restored (changed by shell commands)" in report.summary()


async def test_a_broken_checkpoint_is_refused_clearly_and_changes_nothing(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    (work / "f.txt").write_text("before\n")
    scripted.provider.add(write("f.txt", "after\n"), "done")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("write")
    assert session.id is not None
    [blob] = (home / "checkpoints" / "blobs").glob("*/*")
    blob.unlink()
    with pytest.raises(UndoRefused, match=r"checkpointed content of .*f\.txt is missing"):
        undo_stored(home, session.id, "")
    assert (work / "f.txt").read_text() == "after\n"
    assert len(turn_starts(history(home, session.id))) == 1
    [manifest] = (home / "checkpoints" / session.id).glob("*.json")
    manifest.write_text("{not json")
    with pytest.raises(UndoRefused, match="cannot be read") as refused:
        undo_stored(home, session.id, "")
    assert str(manifest) in str(refused.value) and "delete that file" in str(refused.value)


async def test_a_file_that_cannot_be_restored_stops_before_the_rewind(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    (work / "sub").mkdir()
    (work / "sub" / "f.txt").write_text("old\n")
    scripted.provider.add(write("sub/f.txt", "new\n"), "done")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("write")
    assert session.id is not None
    (work / "sub" / "f.txt").unlink()
    (work / "sub").rmdir()
    (work / "sub").write_text("a file where the folder was\n")
    with pytest.raises(UndoRefused, match=r"could not restore .*f\.txt") as refused:
        undo_stored(home, session.id, "", force=True)
    assert "the conversation was not rewound" in str(refused.value)
    assert len(turn_starts(history(home, session.id))) == 1
    assert (work / "sub").read_text() == "a file where the folder was\n"
