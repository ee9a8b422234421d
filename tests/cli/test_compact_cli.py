"""``openheim sessions compact ID`` end to end: the model summarises the older turns, the next
run is sent the summary, and the stored history keeps every message."""

from __future__ import annotations

from pathlib import Path

from openheim.store import SQLiteStore
from openheim.testing import FakeLLMServer, FakeReply
from openheim.testing.fake_replies import RecordedRequest
from tests.cli.test_cli import configure, openheim

SUMMARY = "SUMMARY: two questions about lighthouses were answered."


def answer(request: RecordedRequest) -> FakeReply:
    system = str(request.messages[0].get("content"))
    return FakeReply(text=SUMMARY if system.startswith("You compact") else "an answer")


def test_sessions_compact_summarises_and_the_next_run_uses_it(home: Path, work: Path) -> None:
    with FakeLLMServer(default=answer) as server:
        configure(home, server)
        for text in ("first question", "second question", "third question"):
            flags = ["--continue"] if text != "first question" else []
            assert openheim("run", *flags, text, home=home, cwd=work).returncode == 0
        with SQLiteStore(home / "openheim.db") as store:
            [record] = store.list()
        done = openheim("sessions", "compact", record.id[:8], home=home, cwd=work)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("compacted 4 older messages into a summary (about ")
        again = openheim("run", "--continue", "fourth question", home=home, cwd=work)
        assert again.returncode == 0, again.stderr
    sent = [str(m["content"]) for m in server.requests[-1].messages if m["role"] != "system"]
    assert len(sent) == 3 and SUMMARY in sent[0] and "first question" not in " ".join(sent)
    with SQLiteStore(home / "openheim.db") as store:
        texts = [m.text for m in store.messages(record.id) if m.role == "user"]
    assert texts == ["first question", "second question", "third question", "fourth question"]


def test_compacting_a_short_session_says_there_is_nothing_to_do(home: Path, work: Path) -> None:
    with FakeLLMServer(default=answer) as server:
        configure(home, server)
        assert openheim("run", "only question", home=home, cwd=work).returncode == 0
        with SQLiteStore(home / "openheim.db") as store:
            [record] = store.list()
        done = openheim("sessions", "compact", record.id, home=home, cwd=work)
    assert (done.returncode, done.stdout) == (
        0,
        "nothing to compact: the session has no turn before its latest\n",
    )
    assert len(server.requests) == 1


def test_compacting_an_unknown_session_is_a_one_line_error(home: Path, work: Path) -> None:
    configure(home, None)
    done = openheim("sessions", "compact", "abcdef12", home=home, cwd=work)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "abcdef12" in done.stderr and len(done.stderr.strip().splitlines()) <= 2
