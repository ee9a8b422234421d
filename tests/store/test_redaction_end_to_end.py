"""A registered API key in the prompt and in the model's answer never reaches the session
database: ``openheim run`` with sessions on, then the SQLite files read directly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openheim.store.sqlite import DB_NAME
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import SECRET, configure, openheim


def every_text_in(db: Path) -> str:
    """All values of all rows of all tables, as text."""
    with sqlite3.connect(db) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        rows = [row for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')]
    conn.close()
    return "\n".join(str(value) for row in rows for value in row)


def test_a_registered_key_is_absent_from_the_stored_session(home: Path, work: Path) -> None:
    answer = FakeReply(text=f"Noted: your key is {SECRET} and it works.")
    with FakeLLMServer([answer]) as server:
        configure(home, server, extra='env_var = "FAKE_API_KEY"\n')
        result = openheim(
            "run", f"Remember my key {SECRET} please", home=home, cwd=work, FAKE_API_KEY=SECRET
        )
    assert result.returncode == 0, result.stderr
    assert server.requests[0].headers.get("authorization") == f"Bearer {SECRET}"  # registered
    stored = every_text_in(home / DB_NAME)
    assert "Remember my key [REDACTED] please" in stored  # the prompt was stored, redacted
    assert "your key is [REDACTED] and it works" in stored  # and so was the answer
    files = sorted(home.glob(DB_NAME + "*"))  # the database, its WAL and shared memory
    assert files and all(SECRET.encode() not in path.read_bytes() for path in files)
