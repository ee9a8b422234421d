"""The SQLite schema and its migrations.

``MIGRATIONS[n]`` takes a database from version ``n`` to ``n + 1``; ``migrate`` applies the
missing ones in one transaction and records the version in ``schema_version``. Never edit a
released migration: append a new one.

Layout: ``sessions`` (one row each, usage as four columns), ``messages`` (one JSON row per
message, numbered by ``seq`` from 0 within its session), ``messages_fts`` (FTS5 over the text of
each message, ``rowid`` = ``messages.id``, written in the same transaction as the message),
``leases`` (the prompt lease of a busy session), ``legacy_imports`` (Rust history files
already imported, with the mtime they had) and ``session_frames`` (the numbered frames a server
sent for a session, for clients that re-attach; version 2) and ``session_compactions`` (where
each compaction of a session cut and what replaced the messages before the cut) and
``session_pins`` (the user prompts pinned, kept verbatim by compactions; both version 3).
"""

from __future__ import annotations

import sqlite3

from openheim.errors import SchemaError as SchemaError

_V1 = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        cwd TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        skills TEXT NOT NULL DEFAULT '[]',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL,
        parent_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        message_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sessions_by_updated ON sessions(updated_at)",
    "CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at)",
    "CREATE INDEX sessions_by_parent ON sessions(parent_id)",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL,
        UNIQUE (session_id, seq)
    )""",
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TABLE leases (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        token TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started TEXT,
        acquired_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    )""",
    """CREATE TABLE legacy_imports (
        name TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL,
        updated_at REAL
    )""",
)

_V2 = (
    """CREATE TABLE session_frames (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
)

_V3 = (
    """CREATE TABLE session_compactions (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        covered INTEGER NOT NULL,
        head TEXT NOT NULL,
        method TEXT NOT NULL,
        before_tokens INTEGER NOT NULL,
        after_tokens INTEGER NOT NULL,
        created_at REAL NOT NULL,
        digest TEXT NOT NULL
    )""",
    "CREATE INDEX session_compactions_by_session ON session_compactions(session_id, id)",
    """CREATE TABLE session_pins (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message INTEGER NOT NULL,
        PRIMARY KEY (session_id, message)
    ) WITHOUT ROWID""",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the version now in place.

    An up-to-date database is only read. Otherwise the missing migrations run in one
    ``BEGIN IMMEDIATE`` transaction, so two processes opening a fresh database at once apply
    each migration exactly once.
    """
    target = len(MIGRATIONS)
    if _version(conn) == target:
        return target
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _version(conn)
        if current > target:
            raise SchemaError(
                f"the session database has schema version {current}, newer than this openheim "
                f"knows ({target})",
                hint="upgrade openheim, or point data_dir at another folder",
            )
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        for statements in MIGRATIONS[current:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("DELETE FROM schema_version")
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (target,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return target


def _version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row[0] is not None else 0
