"""``openheim sessions migrate --to postgresql://...``: the SQLite store of the data dir copied
into PostgreSQL whole (records, messages, compactions, pins, frames, checkpoints), a rerun that
copies nothing, a copy interrupted mid-way finished by a rerun, undo on the PostgreSQL side,
differing counts named, and each bad target one error line with nothing written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg
import pytest

from openheim.messages import Message, Usage
from openheim.runtime import store_migration
from openheim.runtime.checkpoints import CheckpointStore
from openheim.runtime.stored_checkpoints import StoredCheckpoints, checkpoints_for
from openheim.store.compactions import Compaction
from openheim.store.postgres import PostgresStore
from openheim.store.sqlite import SQLiteStore
from openheim.term import exit_codes
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim
from tests.cli.test_sessions_postgres import one_error_line, public_tables

SECRET = "s3cret-pw"


def seed(home: Path, work: Path) -> list[str]:
    """A session made by a real run that wrote a file (a checkpoint), and a fork of it with
    usage, cost, a compaction, a pin and frames; their ids, the first one's first."""
    (work / "a.txt").write_text("before\n")
    write = FakeToolCall("write_file", {"path": "a.txt", "content": "one\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "done"]) as server:
        configure(home, server)
        run = openheim("run", "--approve", "auto", "write it", home=home, cwd=work)
        assert run.returncode == 0, run.stderr
    with SQLiteStore(home / "openheim.db") as store:
        (first,) = store.list()
        fork = store.create(cwd=str(work), provider="p", model="m", parent_id=first.id)
        for text in ("q1", "a1", "q2"):
            store.append(fork.id, Message.user(text) if text[0] == "q" else Message.assistant(text))
        store.update(fork.id, usage=Usage(10, 20, 3, 4), cost=0.5, title="the fork")
        store.compactions.append(fork.id, Compaction(2, "summary", "summary", 100, 10, 7.0, "d"))
        store.compactions.pin(fork.id, 0)
        store.frames.append([(fork.id, n, f'{{"n": {n}}}') for n in (1, 2, 3)])
    return [first.id, fork.id]


def snapshot(store: SQLiteStore | PostgresStore, saved_in: Path) -> list[object]:
    """Everything a migration must carry, per session, oldest first."""
    saved = checkpoints_for(saved_in, store)
    found: list[object] = []
    for record in sorted(store.list(), key=lambda r: r.created_at):
        sid = record.id
        found += [record, store.stored_messages(sid), store.compactions.entries(sid)]
        found += [store.compactions.pins(sid), list(store.frames.after(sid, 0))]
        checkpoints = saved.list(sid)
        blobs = [saved.blob(f.before) for c in checkpoints for f in c.files.values() if f.before]
        found += [checkpoints, blobs]
    return found


def migrate(home: Path, work: Path, url: str) -> tuple[int, str, str]:
    result = openheim("sessions", "migrate", "--to", url, home=home, cwd=work)
    return result.returncode, result.stdout, result.stderr


def test_everything_is_copied_once_and_a_rerun_copies_nothing(
    home: Path, work: Path, pg_url: str
) -> None:
    ids = seed(home, work)
    assert "@" in pg_url and ":" not in pg_url.split("://")[1].split("@")[0]
    secret_url = pg_url.replace("@", f":{SECRET}@", 1)  # the test cluster trusts its socket
    code, out, err = migrate(home, work, secret_url)
    assert code == 0, err
    assert SECRET not in out + err and ":***@" in out
    assert "copied 2 sessions (7 messages, 1 checkpoints)" in out, out
    assert "message counts verified" in out
    with SQLiteStore(home / "openheim.db") as source, PostgresStore(pg_url) as target:
        copied = snapshot(target, Path("/nonexistent"))
        assert copied == snapshot(source, home)
        assert target.get(ids[1]).parent_id == ids[0]
        assert target.search("q2")[0].session_id == ids[1]
    code, out, err = migrate(home, work, secret_url)
    assert code == 0, err
    shown = pg_url.replace("@", ":***@", 1)
    said = f"nothing to copy: 2 sessions, all already in {shown} (message counts verified)\n"
    assert out == said
    with PostgresStore(pg_url) as target:
        assert snapshot(target, Path("/nonexistent")) == copied


def test_a_copy_stopped_mid_session_keeps_whole_sessions_and_a_rerun_finishes(
    home: Path, work: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, fork = seed(home, work)
    with SQLiteStore(home / "openheim.db") as source, PostgresStore(pg_url) as target:
        append: Callable[[Sequence[tuple[str, int, str]]], None] = target.frames.append

        def dies_on_the_fork(frames: Sequence[tuple[str, int, str]]) -> None:
            if any(sid == fork for sid, _, _ in frames):
                raise KeyboardInterrupt  # stopped in the middle of the fork's transaction
            append(frames)

        monkeypatch.setattr(target.frames, "append", dies_on_the_fork)
        rows = target.checkpoint_rows
        assert rows is not None
        with pytest.raises(KeyboardInterrupt):
            store_migration.migrate(source, CheckpointStore(home), target, StoredCheckpoints(rows))
        assert [r.id for r in target.list()] == [first]
        assert target.compactions.entries(fork) == []  # nothing of the fork's was kept
    code, out, err = migrate(home, work, pg_url)
    assert code == 0, err
    assert "copied 1 session (3 messages, 0 checkpoints)" in out and "1 session already" in out
    with SQLiteStore(home / "openheim.db") as source, PostgresStore(pg_url) as target:
        assert snapshot(target, Path("/nonexistent")) == snapshot(source, home)


def test_a_turn_made_on_sqlite_is_undone_from_postgresql(
    home: Path, work: Path, pg_url: str
) -> None:
    first, _ = seed(home, work)
    assert migrate(home, work, pg_url)[0] == 0
    undone = openheim("sessions", "undo", first, home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert undone.returncode == 0, undone.stderr
    assert (work / "a.txt").read_text() == "before\n"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM session_checkpoints").fetchone() == (0,)


def test_a_session_that_differs_in_the_target_is_named(home: Path, work: Path, pg_url: str) -> None:
    first, _ = seed(home, work)
    assert migrate(home, work, pg_url)[0] == 0
    with PostgresStore(pg_url) as target:
        target.append(first, Message.user("continued on the server"))
    code, out, err = migrate(home, work, pg_url)
    assert code == exit_codes.ERROR and out == ""
    line = one_error_line(err)
    assert f"{first} (has 5 messages there, 4 here)" in line, line


@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        (f"mysql://me:{SECRET}@127.0.0.1/db", exit_codes.USAGE, "is not a postgresql:// URL"),
        (f"postgresql://me:{SECRET}@127.0.0.1:x/db", exit_codes.USAGE, "not a valid PostgreSQL"),
        (
            f"postgresql://me:{SECRET}@127.0.0.1:1/db?connect_timeout=5",
            exit_codes.ERROR,
            'failed: connection to server at "127.0.0.1", port 1 failed',
        ),
        ("", exit_codes.USAGE, "is not a postgresql:// URL"),
    ],
    ids=["wrong-scheme", "bad-port", "unreachable", "empty"],
)
def test_a_bad_target_is_one_line_and_nothing_is_written(
    home: Path, work: Path, url: str, code: int, says: str
) -> None:
    seed(home, work)
    before = (home / "openheim.db").read_bytes()
    result, out, err = migrate(home, work, url)
    assert result == code, err
    line = one_error_line(err)
    assert line.startswith("openheim: error: ") and says in line, line
    assert SECRET not in out + err
    assert (home / "openheim.db").read_bytes() == before


def test_without_a_sqlite_store_there_is_nothing_to_migrate(
    home: Path, work: Path, pg_url: str
) -> None:
    code, _, err = migrate(home, work, pg_url)
    assert code == exit_codes.USAGE
    assert "there is no SQLite session store at" in one_error_line(err)
    assert public_tables(pg_url) == []
    assert not (home / "openheim.db").exists()
