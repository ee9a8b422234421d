"""Checkpoints and undo follow the file tools' rule: only a regular file with one name, reached
with no symlink on the way, is read into a checkpoint or restored. A hard link in the work dir
may be another name of a secret elsewhere: its content never enters the checkpoint store (from
where an undo would put it back under the innocent name), and an undo refuses to touch a path
that is not such a file now, even with ``--force``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import UndoRefused
from openheim.runtime import undo as undo_module
from openheim.runtime.checkpoints import CheckpointStore, TurnRecorder
from openheim.runtime.undo import turn_starts, undo_stored
from openheim.tools.builtin.fs import HardLinkError
from tests.api.conftest import MakeRuntime, Scripted
from tests.api.test_undo import history, write
from tests.api.test_undo_attacks import one_turn

SECRET = "API_TOKEN=hunter2-very-secret\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A secret outside the work dir."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / ".env").write_text(SECRET)
    return folder / ".env"


def blob_texts(home: Path) -> list[bytes]:
    return [blob.read_bytes() for blob in (home / "checkpoints").glob("blobs/*/*")]


def relink(path: Path, secret: Path) -> None:
    """Make ``path`` another name of ``secret`` (what another process could do meanwhile)."""
    os.link(secret, path.with_name(".swap"))
    os.replace(path.with_name(".swap"), path)


def test_the_recorder_keeps_no_checkpoint_of_a_hard_link(
    home: Path, work: Path, secret: Path
) -> None:
    os.link(secret, work / "notes.txt")
    recorder = TurnRecorder(CheckpointStore(home), "session-1")
    recorder.begin(0, "write it")
    with pytest.raises(HardLinkError):
        recorder.before_write(work / "notes.txt")
    assert blob_texts(home) == []
    assert CheckpointStore(home).list("session-1") == []


async def test_a_hard_linked_file_written_over_is_not_kept_and_undo_leaves_it(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, secret: Path
) -> None:
    os.link(secret, work / "notes.txt")
    (work / "plain.txt").write_text("plain before\n")
    scripted.provider.add(write("notes.txt", "mine\n"), write("plain.txt", "plain after\n"), "ok")
    async with await make_runtime(approval="auto").new_session() as session:
        result = await session.prompt("write")
    notes = [getattr(e, "message", "") for e in result.events if e.type == "notice"]
    [note] = [n for n in notes if "notes.txt" in n]
    assert "undo will not restore" in note and "hard link (2 names)" in note
    assert "copy of its own" in note and "hunter2" not in note
    assert all(SECRET.encode() not in blob for blob in blob_texts(home))
    assert session.id is not None
    _, report = undo_stored(home, session.id, "")
    assert report.restored == (str(work / "plain.txt"),)
    assert (work / "notes.txt").read_text() == "mine\n"  # never the secret's content
    assert secret.read_text() == SECRET


async def test_undo_refuses_a_path_that_became_a_hard_link_even_forced(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, secret: Path
) -> None:
    (work / "f.txt").write_text("old\n")
    session_id = await one_turn(scripted, make_runtime, ("f.txt", "new\n"), ("made.txt", "m"))
    secret.write_text("new\n")  # the very bytes the tool left, under a second name
    relink(work / "f.txt", secret)
    for force in (False, True):
        with pytest.raises(UndoRefused) as refused:
            undo_stored(home, session_id, "", force=force)
        message = str(refused.value)
        assert f"{work / 'f.txt'} is a hard link (2 names)" in message
        assert "copy of its own" in message and "nothing was changed" in message
        assert refused.value.paths == (str(work / "f.txt"),)
    assert (work / "made.txt").read_text() == "m"  # nothing was removed either
    assert secret.read_text() == "new\n"
    assert len(turn_starts(history(home, session_id))) == 1
    (work / "copy").write_bytes((work / "f.txt").read_bytes())  # as the hint says
    os.replace(work / "copy", work / "f.txt")
    _, report = undo_stored(home, session_id, "")
    assert report.restored == (str(work / "f.txt"),) and (work / "f.txt").read_text() == "old\n"


async def test_undo_refuses_to_remove_a_created_file_that_now_has_another_name(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, tmp_path: Path
) -> None:
    session_id = await one_turn(scripted, make_runtime, ("made.txt", "m"))
    os.link(work / "made.txt", tmp_path / "kept.txt")
    with pytest.raises(UndoRefused, match=r"made\.txt is a hard link \(2 names\)"):
        undo_stored(home, session_id, "", force=True)
    assert (work / "made.txt").read_text() == "m"


async def test_a_file_replaced_by_a_symlink_is_refused_even_forced(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path, secret: Path
) -> None:
    (work / "f.txt").write_text("old\n")
    session_id = await one_turn(scripted, make_runtime, ("f.txt", "new\n"))
    secret.write_text("new\n")  # the same bytes the tool left, behind a link
    (work / "f.txt").unlink()
    (work / "f.txt").symlink_to(secret)
    for force in (False, True):
        with pytest.raises(UndoRefused, match=r"f\.txt is a symlink"):
            undo_stored(home, session_id, "", force=force)
    assert (work / "f.txt").is_symlink() and secret.read_text() == "new\n"


async def test_a_hard_link_swapped_in_after_the_check_stops_the_restore(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    work: Path,
    home: Path,
    secret: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (work / "f.txt").write_text("old\n")
    session_id = await one_turn(scripted, make_runtime, ("f.txt", "new\n"))
    planned = undo_module._plan

    def plan_then_swap(*args: object, **kwargs: object) -> object:
        found = planned(*args, **kwargs)  # type: ignore[arg-type]
        relink(work / "f.txt", secret)  # between the undo's check and its write
        return found

    monkeypatch.setattr(undo_module, "_plan", plan_then_swap)
    with pytest.raises(UndoRefused, match=r"could not restore .*f\.txt: .*hard link"):
        undo_stored(home, session_id, "")
    assert secret.read_text() == SECRET
    assert os.stat(work / "f.txt").st_ino == os.stat(secret).st_ino
    assert len(turn_starts(history(home, session_id))) == 1
