"""Sessions end to end: ``openheim run`` stores, resumes and survives SIGKILL at pinned points."""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openheim.store import SQLiteStore
from openheim.store.base import INTERRUPTED
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim, start_run


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "notes.txt").write_text("remember the word: lighthouse\n")
    return path


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def store(home: Path) -> SQLiteStore:
    return SQLiteStore(home / "openheim.db")


def session_ids(home: Path) -> list[str]:
    with store(home) as s:
        return [r.id for r in s.list()]


def test_run_stores_a_session_and_continue_resumes_it(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    configure(home, server)
    server.add("The first answer.", "The second answer.")
    first = openheim("run", "first question", home=home, cwd=work)
    assert first.returncode == 0, first.stderr
    [sid] = session_ids(home)
    assert f"openheim: session {sid}" in first.stderr
    second = openheim("run", "--continue", "second question", home=home, cwd=work)
    assert second.returncode == 0, second.stderr
    sent = [m["content"] for m in server.requests[1].messages if m["role"] != "system"]
    assert sent == ["first question", "The first answer.", "second question"]
    assert session_ids(home) == [sid]
    with store(home) as s:
        assert s.get(sid).title == "first question" and s.get(sid).message_count == 4


def test_session_prefix_no_session_and_errors(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    configure(home, server)
    server.add("one", "two", "three")
    assert openheim("run", "hello", home=home, cwd=work).returncode == 0
    [sid] = session_ids(home)
    again = openheim("run", "--session", sid[:8], "more", home=home, cwd=work)
    assert again.returncode == 0, again.stderr
    assert len(server.requests[1].messages) == 4  # system + the stored two + the new prompt
    off = openheim("run", "--no-session", "private", home=home, cwd=work)
    assert off.returncode == 0 and session_ids(home) == [sid]
    missing = openheim("run", "--session", "ffffffffff", "x", home=home, cwd=work)
    assert missing.returncode == 2 and "ffffffffff" in missing.stderr
    other = work / "elsewhere"
    other.mkdir()
    none = openheim("run", "--continue", "x", home=home, cwd=other)
    assert none.returncode == 2 and "no session to continue" in none.stderr


def test_sessions_commands(home: Path, work: Path, server: FakeLLMServer) -> None:
    configure(home, server)
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})]),
        "The word is lighthouse.",
    )
    assert openheim("run", "what is the word?", home=home, cwd=work).returncode == 0
    [sid] = session_ids(home)
    listing = openheim("sessions", "list", "--cwd", home=home, cwd=work)
    assert sid[:8] in listing.stdout and "what is the word?" in listing.stdout
    bare = openheim("sessions", home=home, cwd=work)  # no action: the list
    assert bare.returncode == 0 and bare.stdout == listing.stdout, bare.stderr
    shown = openheim("sessions", "show", sid[:8], home=home, cwd=work)
    assert "read_file" in shown.stdout and "lighthouse" in shown.stdout
    exported = openheim("sessions", "export", sid, "--format", "json", home=home, cwd=work)
    document = json.loads(exported.stdout)
    assert document["session"]["id"] == sid and len(document["messages"]) == 4
    found = openheim("sessions", "search", "lighthouse", home=home, cwd=work)
    assert sid[:8] in found.stdout and "**lighthouse**" in found.stdout.lower()
    deleted = openheim("sessions", "delete", sid[:8], home=home, cwd=work)
    assert deleted.returncode == 0 and session_ids(home) == []
    dump = work / "dump.json"
    dump.write_text(exported.stdout)
    back = openheim("sessions", "import", str(dump), home=home, cwd=work)
    assert back.returncode == 0 and session_ids(home) == [sid]


def test_rust_history_is_imported_on_start(home: Path, work: Path, server: FakeLLMServer) -> None:
    rust_id = "0f8c2f6e-5a7d-4c1e-9b7a-3d2e1f0a9b8c"
    (home / "history").mkdir()
    messages = [
        {"role": "user", "content": "hi from rust"},
        {"role": "assistant", "content": "hello from rust"},
    ]
    (home / "history" / f"{rust_id}.json").write_text(
        json.dumps(
            {
                "meta": {
                    "id": rust_id,
                    "created_at": "2025-03-01T10:00:00Z",
                    "model": "fake-model",
                    "provider": "fake",
                    "title": "old chat",
                },
                "messages": messages,
            }
        )
    )
    configure(home, server)
    server.add("continued")
    result = openheim("run", "--session", rust_id, "and now?", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    contents = [m["content"] for m in server.requests[0].messages if m["role"] != "system"]
    assert contents == ["hi from rust", "hello from rust", "and now?"]
    assert (home / "history" / f"{rust_id}.json").exists()  # originals are kept


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


def wait_for_messages(home: Path, count: int, seconds: float = 30) -> str:
    """Poll the store (bounded) until one session holds ``count`` messages; its id."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (home / "openheim.db").exists():
            with store(home) as s:
                records = s.list()
                if records and records[0].message_count >= count:
                    return records[0].id
        time.sleep(0.02)
    raise AssertionError(f"no session reached {count} messages")


def wait_for_reader(fifo: Path, seconds: float = 30) -> None:
    """Poll the process table (bounded) until some process has ``fifo`` in its command line."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if str(fifo).encode() in cmdline.read_bytes() and b"cat" in cmdline.read_bytes():
                    return
            except OSError:
                continue
        time.sleep(0.02)
    raise AssertionError("the tool never started reading the FIFO")


def check_integrity(home: Path) -> None:
    with sqlite3.connect(home / "openheim.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def stored(home: Path, sid: str) -> list[dict[str, Any]]:
    with store(home) as s:
        return [m.to_dict() for m in s.messages(sid)]


def test_killed_while_the_model_streams(home: Path, work: Path, server: FakeLLMServer) -> None:
    configure(home, server)
    server.add(FakeReply(text="a long answer that never ends", hang_at=3), "resumed fine")
    proc = start_run(home, work, "tell me")
    server.wait_for_requests(1, timeout=30)
    kill(proc)
    check_integrity(home)
    [sid] = session_ids(home)
    assert [m["role"] for m in stored(home, sid)] == ["user"]
    result = openheim("run", "--session", sid, "again", home=home, cwd=work)
    assert result.returncode == 0 and "resumed fine" in result.stdout


def release_reader(fifo: Path) -> None:
    """Let a `cat` still reading ``fifo`` finish; the command normally died with openheim, and
    then there is no reader to release (ENXIO)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as err:
        assert err.errno == errno.ENXIO, err
        return
    try:
        os.write(fd, b"done\n")
    finally:
        os.close(fd)


def test_killed_while_a_tool_blocks(home: Path, work: Path, server: FakeLLMServer) -> None:
    fifo = work / "pipe"
    os.mkfifo(fifo)
    configure(home, server)
    call = FakeToolCall("execute_command", {"command": f"cat {fifo}"}, id="call_fifo")
    server.add(FakeReply(tool_calls=[call]), "carrying on")
    proc = start_run(home, work, "--allow-shell", "--approve", "auto", "read the pipe")
    try:
        sid = wait_for_messages(home, 2)  # the prompt and the call are stored
        wait_for_reader(fifo)  # the tool is running, blocked on the FIFO
        kill(proc)
    finally:
        release_reader(fifo)
    check_integrity(home)
    messages = stored(home, sid)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    repaired = messages[2]["content"][0]
    assert repaired["tool_use_id"] == "call_fifo" and repaired["content"] == INTERRUPTED
    result = openheim("run", "--session", sid, "go on", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "carrying on" in result.stdout
    sent = server.requests[-1].messages
    assert any(m.get("role") == "tool" and INTERRUPTED in str(m.get("content")) for m in sent)


def test_killed_right_after_a_tool_result(home: Path, work: Path, server: FakeLLMServer) -> None:
    configure(home, server)
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})]),
        FakeReply(text="never", hang_at=0),
        "the word is lighthouse",
    )
    proc = start_run(home, work, "find the word")
    server.wait_for_requests(2, timeout=30)  # the result is stored before the second call
    kill(proc)
    check_integrity(home)
    [sid] = session_ids(home)
    messages = stored(home, sid)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "lighthouse" in messages[2]["content"][0]["content"]
    result = openheim("run", "--session", sid, "so?", home=home, cwd=work)
    assert result.returncode == 0 and "lighthouse" in result.stdout


def test_a_busy_session_is_refused(home: Path, work: Path, server: FakeLLMServer) -> None:
    configure(home, server)
    server.add("first", FakeReply(text="slow", hang_at=1))
    assert openheim("run", "start", home=home, cwd=work).returncode == 0
    [sid] = session_ids(home)
    holder = start_run(home, work, "--session", sid, "hold it")
    try:
        server.wait_for_requests(2, timeout=30)
        busy = openheim("run", "--session", sid, "me too", home=home, cwd=work)
    finally:
        kill(holder)
    assert busy.returncode == 1
    assert "busy" in busy.stderr and str(holder.pid) in busy.stderr


def test_a_session_keeps_its_skills(home: Path, work: Path, server: FakeLLMServer) -> None:
    (home / "skills").mkdir()
    (home / "skills" / "haiku.md").write_text("Answer in haiku.\n\nAlways three lines.\n")
    configure(home, server)
    server.add("one", "two")
    first = openheim("run", "--skills", "haiku", "hello", home=home, cwd=work)
    assert first.returncode == 0, first.stderr
    again = openheim("run", "--continue", "more", home=home, cwd=work)
    assert again.returncode == 0, again.stderr
    for request in server.requests:
        system = request.messages[0]["content"]
        assert "## Skill: haiku" in system and "Always three lines." in system
    unknown = openheim("run", "--skills", "nope", "x", home=home, cwd=work)
    assert unknown.returncode == 2 and "unknown skill 'nope'" in unknown.stderr
    assert "haiku" in unknown.stderr
