"""``openheim sessions undo`` / ``checkpoints`` and ``:undo`` in the chat, end to end."""

from __future__ import annotations

from pathlib import Path

from openheim.store import SQLiteStore
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim
from tests.tui import support


def write(path: str, content: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": path, "content": content})])


def only_session(home: Path) -> str:
    with SQLiteStore(home / "openheim.db") as store:
        [record] = store.list()
        return record.id


def test_undo_refuses_a_changed_file_by_name_then_forces(home: Path, work: Path) -> None:
    (work / "a.txt").write_text("before\n")
    replies: list[FakeReply | str] = [
        write("a.txt", "one\n"),
        "first",
        write("a.txt", "two\n"),
        "second",
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        auto = ("--approve", "auto")
        assert openheim("run", *auto, "write one", home=home, cwd=work).returncode == 0
        second = openheim("run", *auto, "--continue", "write two", home=home, cwd=work)
        assert second.returncode == 0
    sid = only_session(home)

    listed = openheim("sessions", "checkpoints", sid[:8], home=home, cwd=work)
    assert listed.returncode == 0, listed.stderr
    assert "turn 1 (--turns 2)" in listed.stdout and "turn 2 (--turns 1)" in listed.stdout
    assert "'write two'" in listed.stdout and str(work / "a.txt") in listed.stdout

    (work / "a.txt").write_text("by hand\n")
    refused = openheim("sessions", "undo", home=home, cwd=work)
    assert refused.returncode == 1
    assert refused.stderr.startswith("openheim: error: changed outside openheim since the")
    assert str(work / "a.txt") in refused.stderr and "Traceback" not in refused.stderr
    assert (work / "a.txt").read_text() == "by hand\n"

    forced = openheim("sessions", "undo", sid, "--force", home=home, cwd=work)
    assert forced.returncode == 0, forced.stderr
    assert (work / "a.txt").read_text() == "one\n"
    assert f"session {sid[:8]}: undid 1 turn" in forced.stdout

    undone = openheim("sessions", "undo", "--turns", "1", home=home, cwd=work)
    assert undone.returncode == 0, undone.stderr
    assert (work / "a.txt").read_text() == "before\n"
    empty = openheim("sessions", "undo", home=home, cwd=work)
    assert empty.returncode == 1 and "nothing to undo" in empty.stderr
    bad = openheim("sessions", "undo", "--turns", "0", home=home, cwd=work)
    assert bad.returncode == 1 and "--turns must be 1 or more" in bad.stderr
    unknown = openheim("sessions", "checkpoints", "ffffffff", home=home, cwd=work)
    assert unknown.returncode == 2
    assert (home / "checkpoints" / sid).is_dir()
    assert openheim("sessions", "delete", sid, home=home, cwd=work).returncode == 0
    assert not (home / "checkpoints" / sid).exists()


def test_chat_undo_restores_and_rewinds(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [write("new.txt", "made\n"), "made it", "the second answer"]
    with FakeLLMServer(replies) as server:
        support.configure(home, server, extra='approval = "auto"')
        typed = "make a file\n:undo\nwhat now?\n:undo 5\n"
        done = support.run_openheim(home, work, "chat", "--no-tui", typed=typed)
    assert done.returncode == 0, done.stderr
    assert f"removed {work / 'new.txt'}" in done.stdout
    assert not (work / "new.txt").exists()
    sent = server.requests[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["what now?"]
    assert "fewer than the 5 to undo" in done.stdout + done.stderr
