"""``openheim sessions`` and ``openheim run`` against the PostgreSQL store named by
``OPENHEIM_STORE_URL``: the commands work on it, and each kind of bad store is one error line
with its exit code, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from openheim.messages import Message
from openheim.store.postgres import PostgresStore
from openheim.term import exit_codes
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim

SECRET = "s3cret-pw"


def public_tables(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
    return [row[0] for row in rows]


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        (f"mysql://me:{SECRET}@127.0.0.1/db", exit_codes.USAGE, "is not a postgresql:// URL"),
        (f"postgresql://me:{SECRET}@127.0.0.1:x/db", exit_codes.USAGE, "not a valid PostgreSQL"),
        (f"postgresql://me:{SECRET}@127.0.0.1/db?port=notaport", exit_codes.USAGE, "its port is"),
        (
            f"postgresql://me:{SECRET}@127.0.0.1:1/db?connect_timeout=5",
            exit_codes.ERROR,
            'failed: connection to server at "127.0.0.1", port 1 failed',
        ),
    ],
    ids=["wrong-scheme", "bad-port", "query-port", "unreachable"],
)
def test_a_bad_url_is_one_line_with_its_exit_code(
    home: Path, work: Path, url: str, code: int, says: str
) -> None:
    result = openheim("sessions", "list", home=home, cwd=work, OPENHEIM_STORE_URL=url)
    assert result.returncode == code, result.stderr
    line = one_error_line(result.stderr)
    assert line.startswith("openheim: error: ") and says in line
    assert SECRET not in result.stderr + result.stdout
    assert not (home / "openheim.db").exists()  # no SQLite store made instead


def test_a_database_of_another_application_is_refused_untouched(
    home: Path, work: Path, pg_url: str
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    result = openheim("sessions", "list", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert result.returncode == exit_codes.USAGE
    assert "tables of another application" in one_error_line(result.stderr)
    assert public_tables(pg_url) == ["invoices"]


def test_a_newer_schema_is_refused_untouched(home: Path, work: Path, pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO openheim_schema VALUES (1000, 0)")
        before = conn.execute("SELECT count(*) FROM openheim_schema").fetchone()
    result = openheim("sessions", "list", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert result.returncode == exit_codes.ERROR
    assert "schema version 1000, newer than this openheim" in one_error_line(result.stderr)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM openheim_schema").fetchone() == before


def test_list_show_and_export_read_the_postgresql_store(
    home: Path, work: Path, pg_url: str
) -> None:
    with PostgresStore(pg_url) as store:
        sid = store.create(cwd=str(work), provider="fake", model="fake-model").id
        store.append(sid, Message.user("where is the lighthouse"))
        store.append(sid, Message.assistant("on the northern cape"))
    env = {"OPENHEIM_STORE_URL": pg_url}
    listed = openheim("sessions", "list", home=home, cwd=work, **env)
    assert listed.returncode == 0, listed.stderr
    assert sid[:8] in listed.stdout and "where is the lighthouse" in listed.stdout
    shown = openheim("sessions", "show", sid[:8], home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert shown.returncode == 0 and "on the northern cape" in shown.stdout
    out = work / "s.json"
    exported = openheim(
        *("sessions", "export", sid, "--format", "json", "-o", str(out)),
        home=home,
        cwd=work,
        OPENHEIM_STORE_URL=pg_url,
    )
    assert exported.returncode == 0, exported.stderr
    assert "on the northern cape" in json.dumps(json.loads(out.read_text(encoding="utf-8")))
    found = openheim("sessions", "search", "lighthouses", home=home, cwd=work, **env)
    assert found.returncode == 0 and sid[:8] in found.stdout and "**lighthouse**" in found.stdout
    deleted = openheim("sessions", "delete", sid, home=home, cwd=work, **env)
    assert deleted.returncode == 0, deleted.stderr
    with PostgresStore(pg_url) as store:
        assert store.list() == []
    assert not (home / "openheim.db").exists()


def test_run_stores_its_session_in_postgresql_and_continues_it(
    home: Path, work: Path, pg_url: str
) -> None:
    replies = [FakeReply(text="first answer"), FakeReply(text="second answer")]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        config = home / "config.toml"  # store_url is a top-level key: before the tables
        config.write_text(f'store_url = "{pg_url}"\n' + config.read_text(encoding="utf-8"))
        first = openheim("run", "first question", home=home, cwd=work)
        assert first.returncode == 0, first.stderr
        with PostgresStore(pg_url) as store:
            (record,) = store.list()
        second = openheim("run", "--session", record.id, "second question", home=home, cwd=work)
        assert second.returncode == 0, second.stderr
    with PostgresStore(pg_url) as store:
        texts = [m.text for m in store.messages(record.id)]
    assert texts == ["first question", "first answer", "second question", "second answer"]
    assert not (home / "openheim.db").exists()


def test_undo_restores_from_checkpoints_kept_in_postgresql(
    home: Path, work: Path, pg_url: str
) -> None:
    """The file contents a turn changed are kept in the database, not under this machine's
    data dir, so any machine sharing the store undoes the turn."""
    (work / "a.txt").write_text("before\n")
    replies: list[FakeReply | str] = [
        FakeReply(tool_calls=[FakeToolCall("write_file", {"path": "a.txt", "content": "one\n"})]),
        "done",
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        run = openheim(
            "run", "--approve", "auto", "write", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url
        )
        assert run.returncode == 0, run.stderr
    assert (work / "a.txt").read_text() == "one\n"
    assert not (home / "checkpoints").exists()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone() == (1,)
    undone = openheim("sessions", "undo", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert undone.returncode == 0, undone.stderr
    assert (work / "a.txt").read_text() == "before\n"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM session_checkpoints").fetchone() == (0,)
