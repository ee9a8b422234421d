"""Attacks on checkpoints and undo: folders swapped for symlinks between the turn and the
undo, forged manifests, session ids that are paths, private permissions and huge files."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest

from openheim.errors import SessionBusy, UndoRefused
from openheim.runtime import checkpoints
from openheim.runtime.checkpoints import CheckpointStore
from openheim.runtime.undo import turn_starts, undo_stored
from openheim.testing import Reply, tool_call
from tests.api.conftest import Blocker, MakeRuntime, Scripted
from tests.api.support import soon
from tests.api.test_undo import history, write


async def one_turn(scripted: Scripted, make_runtime: MakeRuntime, *writes: tuple[str, str]) -> str:
    """A stored session whose one turn writes each ``(path, content)``; its id."""
    scripted.provider.add(*(write(path, content) for path, content in writes), "done")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("write")
    assert session.id is not None
    return session.id


def undo_restoring_only(home: Path, session_id: str, path: Path) -> None:
    """Undo the session's last turn, which must restore ``path`` and nothing else."""
    _, report = undo_stored(home, session_id, "")
    assert report.restored == (str(path),)


async def test_a_folder_swapped_for_a_symlink_is_never_written_or_deleted_through(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, tmp_path: Path
) -> None:
    (work / "sub").mkdir()
    (work / "sub" / "keys").write_text("mine\n")
    session_id = await one_turn(scripted, make_runtime, ("sub/keys", "new\n"), ("sub/made", "m"))
    # the tree is swapped: "sub" now leads outside, where the same contents wait
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keys").write_text("new\n")
    (outside / "made").write_text("m")
    (work / "sub").rename(work / "sub.moved")
    (work / "sub").symlink_to(outside)
    for force in (False, True):
        with pytest.raises(UndoRefused) as refused:
            undo_stored(home, session_id, "", force=force)
        assert "sub" in str(refused.value)
        assert (outside / "keys").read_text() == "new\n"
        assert (outside / "made").read_text() == "m"
    assert len(turn_starts(history(home, session_id))) == 1


async def test_checkpoint_files_are_private(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    (work / "secret.txt").write_text("the user's private text\n")
    session_id = await one_turn(scripted, make_runtime, ("secret.txt", "x"))
    root = home / "checkpoints"
    [blob] = (root / "blobs").glob("*/*")
    [manifest] = (root / session_id).glob("*.json")
    for folder in (root, root / "blobs", blob.parent, root / session_id):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for file in (blob, manifest):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


FORGED = [
    {"files": ["/etc/passwd"]},
    {"files": {"relative/path": {"before": None, "after": None, "mode": None}}},
    {"files": {"/a/../etc/passwd": {"before": None, "after": None, "mode": None}}},
    {"files": {"/x": {"before": 7, "after": None, "mode": None}}},
    {"files": {"/x": {"before": None, "after": None, "mode": "0777"}}},
    {"files": {"/x": {"before": None, "after": None, "mode": 0o100000}}},
    {"files": {"/x": ["before"]}},
    {"turn": True},
    {"session_id": "../other"},
    {"shell_changed": "abc"},
    {"version": 99},
]


@pytest.mark.parametrize("change", FORGED, ids=[str(i) for i in range(len(FORGED))])
async def test_a_forged_manifest_is_refused_in_one_line(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    work: Path,
    home: Path,
    change: dict[str, object],
) -> None:
    session_id = await one_turn(scripted, make_runtime, ("f.txt", "after\n"))
    [manifest] = (home / "checkpoints" / session_id).glob("*.json")
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), **change}))
    with pytest.raises(UndoRefused, match="cannot be read") as refused:
        undo_stored(home, session_id, "", force=True)
    assert "\n" not in refused.value.message
    assert (work / "f.txt").read_text() == "after\n"
    assert CheckpointStore(home).prune(min_age=0) == 0  # a forged manifest does not break it


@pytest.mark.parametrize("session_id", ["", "..", ".hidden", "a/b", "a\\b", "x\x00", "é", "a" * 65])
def test_a_session_id_that_is_no_plain_name_is_refused(home: Path, session_id: str) -> None:
    with pytest.raises(ValueError, match="not a session id"):
        CheckpointStore(home).list(session_id)


async def test_a_file_over_the_bound_is_not_read_into_a_checkpoint(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    work: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoints, "MAX_BLOB_BYTES", 1000)
    (work / "big.bin").write_bytes(b"x" * 1001)
    (work / "small.txt").write_text("s")
    scripted.provider.add(write("big.bin", "y"), write("small.txt", "t"), "done")
    async with await make_runtime(approval="auto").new_session() as session:
        result = await session.prompt("write")
    notes = [getattr(e, "message", "") for e in result.events if e.type == "notice"]
    assert any("undo will not restore" in n and "big.bin" in n for n in notes), notes
    blobs = (home / "checkpoints" / "blobs").glob("*/*")
    assert all(blob.stat().st_size <= 1000 for blob in blobs)
    assert session.id is not None
    undo_restoring_only(home, session.id, work / "small.txt")
    assert (work / "big.bin").read_text() == "y"


async def test_an_undo_while_a_prompt_runs_is_refused_and_touches_nothing(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, blocker: Blocker
) -> None:
    block = Reply(tool_calls=[tool_call("block", {"label": "b"})])
    scripted.provider.add(write("f.txt", "one"), "done", write("f.txt", "two"), block, "end")
    async with await make_runtime(approval="auto", tools=[blocker.tool]).new_session() as session:
        await session.prompt("first")
        assert session.id is not None
        run = asyncio.ensure_future(session.prompt("second"))
        await soon(blocker.started.wait())
        with pytest.raises(SessionBusy):
            await asyncio.to_thread(undo_stored, home, session.id, "", force=True)
        assert (work / "f.txt").read_text() == "two"
        blocker.release.set()
        await soon(run)
    undo_restoring_only(home, session.id, work / "f.txt")
    assert (work / "f.txt").read_text() == "one"


def test_a_prompt_with_a_lone_surrogate_is_recorded(home: Path, work: Path) -> None:
    (work / "f.txt").write_text("old")
    recorder = checkpoints.TurnRecorder(CheckpointStore(home), "session-1")
    recorder.begin(0, "fix \ud800 this")
    recorder.before_write(work / "f.txt")
    [checkpoint] = CheckpointStore(home).list("session-1")
    assert checkpoint.prompt == "fix \ud800 this"
    assert list(checkpoint.files) == [str(work / "f.txt")]


async def test_a_damaged_blob_is_refused_before_anything_is_restored(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    (work / "a.txt").write_text("a before")
    (work / "b.txt").write_text("b before")
    session_id = await one_turn(scripted, make_runtime, ("a.txt", "a after"), ("b.txt", "b after"))
    damaged = CheckpointStore(home).root / "blobs"
    [blob] = [p for p in damaged.glob("*/*") if p.read_bytes() == b"b before"]
    blob.write_bytes(b"planted content")
    with pytest.raises(UndoRefused, match=r"b\.txt is missing from .* or damaged"):
        undo_stored(home, session_id, "", force=True)
    assert (work / "a.txt").read_text() == "a after"
    assert (work / "b.txt").read_text() == "b after"


def _outside_target(work: Path, tmp_path: Path, where: str) -> Path:
    """A path a forged manifest names, outside the work dir ``work``."""
    places = {
        "outside": tmp_path / "outside" / "planted.txt",
        "sibling": Path(f"{work}-sibling") / "planted.txt",
        "work dir itself": work,
        "parent": work.parent / "planted.txt",
    }
    return places[where]


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("exists", [False, True])
@pytest.mark.parametrize("where", ["outside", "sibling", "work dir itself", "parent"])
async def test_a_manifest_naming_a_path_outside_the_work_dir_writes_nothing(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    work: Path,
    home: Path,
    tmp_path: Path,
    where: str,
    exists: bool,
    force: bool,
) -> None:
    (work / "f.txt").write_text("before\n")
    session_id = await one_turn(scripted, make_runtime, ("f.txt", "after\n"))
    target = _outside_target(work, tmp_path, where)
    if exists and not target.exists():
        target.parent.mkdir(exist_ok=True)
        target.write_text("theirs\n")
    [manifest] = (home / "checkpoints" / session_id).glob("*.json")
    body = json.loads(manifest.read_text())
    [state] = body["files"].values()
    now = checkpoints.digest(b"theirs\n") if exists else None
    # restoring would write "before\n" there, or (exists) remove what is there
    forged = {"before": None if exists else state["before"], "after": now, "mode": None}
    body["files"][str(target)] = forged
    manifest.write_text(json.dumps(body))
    before = target.read_bytes() if target.is_file() else None
    with pytest.raises(UndoRefused, match="outside the work dir") as refused:
        undo_stored(home, session_id, "", force=force)
    assert "\n" not in refused.value.message and str(target) in refused.value.message
    assert (target.read_bytes() if target.is_file() else None) == before
    assert target.is_dir() or target.exists() == exists
    assert (work / "f.txt").read_text() == "after\n"
    assert len(turn_starts(history(home, session_id))) == 1
