"""Every session command of the ``openheim`` CLI, run as a subprocess against the PostgreSQL
store that ``OPENHEIM_STORE_URL`` names: ``run`` and ``run --session``, ``sessions list``,
``show``, ``export`` (each format), ``search``, ``checkpoints``, ``undo``, ``compact``,
``import``, ``delete``, and the plain ``chat`` REPL. Each one's effect is read back from the
database, and nothing is ever written to a SQLite store in the data dir.

The read-only commands share one seeded database; each command that changes the store gets a
database of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from openheim.store.postgres import PostgresStore
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.cli.test_cli import configure, openheim
from tests.pgcluster import Cluster

SUMMARY = "SUMMARY: a note was written and a lighthouse located."
WRITE = "write the note"
ASK = "where is the lighthouse"


def answer(request: RecordedRequest) -> FakeReply:
    """The fake model: summarises when asked to compact, writes ``note.txt`` when told to,
    and otherwise answers ``answer to <the prompt>``."""
    if str(request.messages[0].get("content")).startswith("You compact"):
        return FakeReply(text=SUMMARY)
    last = request.messages[-1]
    if last["role"] == "tool":
        return FakeReply(text="the note is written")
    if last["content"] == WRITE:
        return FakeReply(
            tool_calls=[FakeToolCall("write_file", {"path": "note.txt", "content": "new\n"})]
        )
    return FakeReply(text=f"answer to {last['content']}")


@dataclass(frozen=True)
class Seeded:
    """A PostgreSQL store holding one session made by the CLI: a turn that wrote
    ``note.txt`` (a checkpoint), then a question asked with ``run --session``."""

    home: Path
    work: Path
    url: str
    sid: str

    def cli(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        done = openheim(
            *args, home=self.home, cwd=self.work, stdin=stdin, OPENHEIM_STORE_URL=self.url
        )
        assert "Traceback" not in done.stderr, done.stderr
        assert not (self.home / "openheim.db").exists()  # never a SQLite store instead
        return done.returncode, done.stdout, done.stderr

    def texts(self, session_id: str | None = None) -> list[str]:
        with PostgresStore(self.url) as store:
            return [m.text for m in store.messages(session_id or self.sid)]

    def sessions(self) -> list[str]:
        with PostgresStore(self.url) as store:
            return [record.id for record in store.list()]


def seed(home: Path, work: Path, url: str) -> Seeded:
    (work / "note.txt").write_text("old\n")
    first = openheim("run", "--approve", "auto", WRITE, home=home, cwd=work, OPENHEIM_STORE_URL=url)
    assert first.returncode == 0, first.stderr
    with PostgresStore(url) as store:
        (record,) = store.list()
    seeded = Seeded(home, work, url, record.id)
    code, out, err = seeded.cli("run", "--session", record.id[:8], ASK)
    assert (code, out) == (0, f"answer to {ASK}\n"), err
    return seeded


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default=answer) as server:
        yield server


@pytest.fixture
def fresh(home: Path, work: Path, pg_url: str, llm: FakeLLMServer) -> Seeded:
    """A seeded store of this test's own."""
    configure(home, llm)
    return seed(home, work, pg_url)


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, pg_cluster: Cluster, llm: FakeLLMServer
) -> Iterator[Seeded]:
    """One seeded store for the commands that only read."""
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    configure(home, llm)
    url = pg_cluster.database()
    try:
        yield seed(home, work, url)
    finally:
        pg_cluster.drop(url)


def test_the_seeded_session_holds_both_turns(fresh: Seeded) -> None:
    texts = fresh.texts()
    assert texts[0] == WRITE and texts[-3:] == ["the note is written", ASK, f"answer to {ASK}"]
    assert (fresh.work / "note.txt").read_text() == "new\n"


@pytest.mark.parametrize(
    ("args", "shows"),
    [
        (("sessions", "list"), ["{sid8}", "6 msgs", WRITE]),
        (("sessions", "list", "--cwd"), ["{sid8}"]),
        (("sessions", "show", "{sid8}"), [f"answer to {ASK}", WRITE]),
        (("sessions", "export", "{sid}"), [f"answer to {ASK}", WRITE]),
        (("sessions", "export", "{sid}", "--format", "md"), [f"answer to {ASK}", "note.txt"]),
        (("sessions", "export", "{sid}", "--format", "json"), ['"id": "{sid}"', ASK]),
        (("sessions", "search", "lighthouses"), ["{sid8}", "**lighthouse**"]),
        (("sessions", "checkpoints", "{sid8}"), ["turn 1 (--turns 2)", "note.txt", WRITE]),
    ],
    ids=["list", "list-cwd", "show", "export", "export-md", "export-json", "search", "checkpoints"],
)
def test_a_reading_command_shows_the_stored_session(
    shared: Seeded, args: tuple[str, ...], shows: list[str]
) -> None:
    fill = {"sid": shared.sid, "sid8": shared.sid[:8]}
    code, out, err = shared.cli(*(arg.format(**fill) for arg in args))
    assert code == 0, err
    for part in shows:
        assert part.format(**fill) in out, out


def test_export_json_then_import_makes_a_copy_in_postgresql(fresh: Seeded) -> None:
    dump = fresh.work / "s.json"
    code, _, err = fresh.cli("sessions", "export", fresh.sid, "--format", "json", "-o", str(dump))
    assert code == 0, err
    assert json.loads(dump.read_text(encoding="utf-8"))["session"]["id"] == fresh.sid
    code, _, _ = fresh.cli("sessions", "delete", fresh.sid)
    assert code == 0 and fresh.sessions() == []
    with psycopg.connect(fresh.url, autocommit=True) as conn:  # its checkpoints went with it
        assert conn.execute("SELECT count(*) FROM session_checkpoints").fetchone() == (0,)
    code, out, err = fresh.cli("sessions", "import", str(dump))
    assert (code, out.split()[:2]) == (0, ["imported", fresh.sid]), err
    assert fresh.texts()[-2:] == [ASK, f"answer to {ASK}"]


def test_import_of_a_rust_history_folder_lands_in_postgresql(fresh: Seeded) -> None:
    rust_id = "0f8c2f6e-5a7d-4c1e-9b7a-3d2e1f0a9b8c"
    folder = fresh.work / "history"
    folder.mkdir()
    meta = {"id": rust_id, "created_at": "2025-03-01T10:00:00Z", "model": "m", "provider": "p"}
    messages = [{"role": "user", "content": "hi from rust"}, {"role": "assistant", "content": "yo"}]
    (folder / f"{rust_id}.json").write_text(json.dumps({"meta": meta, "messages": messages}))
    code, out, err = fresh.cli("sessions", "import", str(folder))
    assert (code, out) == (0, f"imported 1 session from {folder}\n"), err
    assert fresh.texts(rust_id) == ["hi from rust", "yo"]


def test_undo_rewinds_the_stored_session_and_restores_the_file(fresh: Seeded) -> None:
    code, out, err = fresh.cli("sessions", "undo", "--turns", "2")
    assert code == 0, err
    assert out.startswith(f"session {fresh.sid[:8]}: ")
    assert (fresh.work / "note.txt").read_text() == "old\n"
    assert fresh.texts() == []


def test_compact_summarises_in_postgresql_and_the_next_run_is_sent_the_summary(
    fresh: Seeded, llm: FakeLLMServer
) -> None:
    code, out, err = fresh.cli("sessions", "compact", fresh.sid[:8])
    assert code == 0 and out.startswith("compacted "), err
    with psycopg.connect(fresh.url, autocommit=True) as conn:
        (kept,) = conn.execute("SELECT head FROM session_compactions").fetchone() or ("",)
    assert SUMMARY in kept
    code, out, err = fresh.cli("run", "--continue", "and the note?")
    assert (code, out) == (0, "answer to and the note?\n"), err
    sent = [str(m["content"]) for m in llm.requests[-1].messages if m["role"] != "system"]
    assert SUMMARY in sent[0] and WRITE not in " ".join(sent)
    assert fresh.texts()[0] == WRITE  # the history keeps every message


def test_chat_restores_compacts_and_continues_a_postgresql_session(fresh: Seeded) -> None:
    typed = f":sessions {fresh.sid[:8]}\nand the keeper?\n:export chat.md\n:compact\n:quit\n"
    code, out, err = fresh.cli("chat", "--no-tui", stdin=typed)
    assert code == 0, err
    assert "restored session" in out and "answer to and the keeper?" in out
    assert "compacted " in out
    assert fresh.texts()[-2:] == ["and the keeper?", "answer to and the keeper?"]
    with psycopg.connect(fresh.url, autocommit=True) as conn:
        (kept,) = conn.execute("SELECT head FROM session_compactions").fetchone() or ("",)
    assert SUMMARY in kept
    exported = (fresh.work / "chat.md").read_text(encoding="utf-8")
    assert WRITE in exported and "and the keeper?" in exported
    assert fresh.sessions() == [fresh.sid]


def test_chat_session_flag_continues_it_and_undo_rewinds_in_the_repl(fresh: Seeded) -> None:
    typed = "one more\n:undo\n:quit\n"
    code, out, err = fresh.cli("chat", "--no-tui", "--session", fresh.sid, stdin=typed)
    assert code == 0, err
    assert "answer to one more" in out
    assert fresh.texts()[-2:] == [ASK, f"answer to {ASK}"]  # the undone turn is gone
    assert fresh.sessions() == [fresh.sid]
