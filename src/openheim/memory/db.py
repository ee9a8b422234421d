"""The SQLite side of long-term memory: one table, an FTS5 index kept in step by triggers.

Synchronous and thread-safe (one connection behind a lock), so the async ``MemoryStore`` can run
each call in a worker thread. WAL journaling lets several sessions share one file. Ids come from
AUTOINCREMENT, so the id of a forgotten memory is never handed out again.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from openheim.errors import ConfigError

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    embedding BLOB,
    embedding_model TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    text, tags, content='memories', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
"""
_COLUMNS = "m.id, m.text, m.tags, m.created, m.updated"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Memory:
    """One remembered note."""

    id: int
    text: str
    tags: tuple[str, ...]
    created: str
    updated: str


@dataclass(frozen=True)
class Hit:
    """A search result; ``score`` is larger for better matches (negated BM25, or cosine)."""

    memory: Memory
    score: float
    method: Literal["keyword", "semantic"] = "keyword"


class MemoryTables(Protocol):
    """What ``MemoryStore`` asks of its database: this SQLite one, or PostgreSQL's
    (``pg_db.PgMemoryDB``)."""

    def close(self) -> None: ...
    def insert(
        self, text: str, tags: Sequence[str], vector: bytes | None, model: str | None
    ) -> Memory: ...
    def update(
        self, id_: int, text: str, vector: bytes | None, model: str | None
    ) -> Memory | None: ...
    def delete(self, id_: int) -> Memory | None: ...
    def get(self, id_: int) -> Memory | None: ...
    def recent(self, limit: int) -> list[Memory]: ...
    def keyword_search(
        self, query: str, limit: int, *, unembedded_for: str | None = None
    ) -> list[Hit]: ...
    def vectors(self, model: str) -> list[tuple[Memory, bytes]]: ...


def words_of(text: str) -> list[str]:
    """The words of a search: letters, digits and underscores (anything else is no syntax)."""
    return _WORD.findall(text)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of ``text``, each quoted so no character is syntax."""
    words = words_of(text)
    return " OR ".join(f'"{word}"' for word in words) if words else None


def _open_error(path: Path, err: Exception) -> ConfigError:
    return ConfigError(
        f"cannot open the memory database {path}: {err}",
        hint="fix [memory].db_path in config.toml, or move the damaged file away",
    )


def now_stamp() -> str:
    """A memory's ``created``/``updated`` stamp: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def memory_of(row: Sequence[Any]) -> Memory:
    """A ``Memory`` from a row of id, text, tags, created, updated (first)."""
    id_, text, tags, created, updated = row[:5]
    return Memory(int(id_), text, tuple(t for t in tags.split("\n") if t), created, updated)


class MemoryDB:
    """The ``memories`` table of one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, check_same_thread=False)
        except (OSError, sqlite3.Error) as err:
            raise _open_error(path, err) from None
        try:
            self._setup()
        except sqlite3.Error as err:
            self._conn.close()
            raise _open_error(path, err) from None

    def _setup(self) -> None:
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"it has schema version {version}; this openheim knows up to {SCHEMA_VERSION}"
            )
        with self._conn:
            self._conn.executescript(_SCHEMA)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def insert(
        self, text: str, tags: Sequence[str], vector: bytes | None, model: str | None
    ) -> Memory:
        now = now_stamp()
        with self._lock, self._conn:
            cursor = self._conn.execute(
                "INSERT INTO memories (text, tags, created, updated, embedding, embedding_model) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (text, "\n".join(tags), now, now, vector, model),
            )
        return Memory(int(cursor.lastrowid or 0), text, tuple(tags), now, now)

    def update(self, id_: int, text: str, vector: bytes | None, model: str | None) -> Memory | None:
        """Replace a memory's text (and its vector); None when there is no such memory."""
        with self._lock, self._conn:
            self._conn.execute(
                "UPDATE memories SET text = ?, updated = ?, embedding = ?, embedding_model = ? "
                "WHERE id = ?",
                (text, now_stamp(), vector, model, id_),
            )
            return self._find(id_)

    def delete(self, id_: int) -> Memory | None:
        """Remove a memory and return it; None when there is no such memory."""
        with self._lock, self._conn:
            found = self._find(id_)
            if found is not None:
                self._conn.execute("DELETE FROM memories WHERE id = ?", (id_,))
        return found

    def get(self, id_: int) -> Memory | None:
        """The memory with id ``id_``, or None."""
        with self._lock:
            return self._find(id_)

    def recent(self, limit: int) -> list[Memory]:
        """The ``limit`` most recently updated memories, newest first."""
        sql = f"SELECT {_COLUMNS} FROM memories m ORDER BY m.updated DESC, m.id DESC LIMIT ?"
        with self._lock:
            rows = self._conn.execute(sql, (limit,)).fetchall()
        return [memory_of(row) for row in rows]

    def _find(self, id_: int) -> Memory | None:
        row = self._conn.execute(f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ?", (id_,))
        found = row.fetchone()
        return None if found is None else memory_of(found)

    def keyword_search(
        self, query: str, limit: int, *, unembedded_for: str | None = None
    ) -> list[Hit]:
        """BM25-ranked matches of any word of ``query``, best first.

        With ``unembedded_for`` only memories without a vector from that model are searched
        (those a semantic search cannot see).
        """
        match = fts_query(query)
        if match is None:
            return []
        sql = (
            f"SELECT {_COLUMNS}, bm25(memories_fts) AS rank FROM memories_fts "
            "JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?"
        )
        params: list[object] = [match]
        if unembedded_for is not None:
            sql += " AND (m.embedding IS NULL OR m.embedding_model IS NOT ?)"
            params.append(unembedded_for)
        sql += " ORDER BY rank, m.id LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [Hit(memory_of(row), -float(row[5])) for row in rows]

    def vectors(self, model: str) -> list[tuple[Memory, bytes]]:
        """Every memory with a vector from ``model``, and that vector."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS}, m.embedding FROM memories m "
                "WHERE m.embedding IS NOT NULL AND m.embedding_model = ? ORDER BY m.id",
                (model,),
            ).fetchall()
        return [(memory_of(row), bytes(row[5])) for row in rows]
