from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.store.common import SqlStore
from openheim.store.sqlite import SQLiteStore, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    """A fresh store of each backend, closed after the test: SQLite in a temporary data dir,
    PostgreSQL in a fresh database of the test run's cluster. The store's contract tests take
    this one, so they run on both."""
    if request.param == "postgres":
        from openheim.store.postgres import PostgresStore

        with PostgresStore(request.getfixturevalue("pg_url")) as opened:
            yield opened
    else:
        with open_store(tmp_path) as sqlite:
            yield sqlite


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh SQLite store, for what only SQLite has (its file, other processes on it)."""
    with open_store(tmp_path) as opened:
        yield opened
