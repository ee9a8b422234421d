"""The PostgreSQL schema and its versioned migrations, applied once however many replicas start.

``MIGRATIONS[n]`` takes the database from version ``n`` to ``n + 1``; ``openheim_schema`` holds
one row per migration applied. ``migrate`` runs under a session-level ``pg_advisory_lock``, so
replicas starting together on a fresh database wait for the first and then find nothing left to
do. The tables mirror the SQLite store's (``schema.py``) with PostgreSQL types, plus the undo
checkpoints that SQLite keeps in files (version 2); a message's
search text is a column of its row, indexed as a ``tsvector`` with English stemming and no stop
words (every word of a search must match, as with SQLite's FTS5).

A database that holds tables but no ``openheim_schema`` belongs to another application: it is
refused before anything is written, as is one whose schema is newer than this openheim.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from openheim.errors import ConfigError, SchemaError

LOCK_KEY = 0x6F70656E6865696D
"""``pg_advisory_lock`` key of migrations (``openheim`` in ASCII)."""
WRITE_KEY = LOCK_KEY + 1
"""``pg_advisory_xact_lock`` key every write transaction takes first (see ``postgres.py``)."""

_SESSION_ID = 'TEXT COLLATE "C"'
"""Session ids compare bytewise, so a prefix is a range of the primary key."""

_V1 = (
    "CREATE TEXT SEARCH DICTIONARY openheim_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION openheim_search (COPY = simple)",
    "ALTER TEXT SEARCH CONFIGURATION openheim_search ALTER MAPPING FOR asciiword, word,"
    " numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart"
    " WITH openheim_stem",
    f"""CREATE TABLE sessions (
        id {_SESSION_ID} PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        cwd TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        skills TEXT NOT NULL DEFAULT '[]',
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        cache_read_tokens BIGINT NOT NULL DEFAULT 0,
        cache_write_tokens BIGINT NOT NULL DEFAULT 0,
        cost DOUBLE PRECISION,
        parent_id {_SESSION_ID} REFERENCES sessions(id) ON DELETE SET NULL,
        message_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sessions_by_updated ON sessions(updated_at)",
    "CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at)",
    "CREATE INDEX sessions_by_parent ON sessions(parent_id)",
    f"""CREATE TABLE messages (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id {_SESSION_ID} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL,
        search TSVECTOR GENERATED ALWAYS AS (to_tsvector('openheim_search', text)) STORED,
        UNIQUE (session_id, seq)
    )""",
    "CREATE INDEX messages_search ON messages USING GIN (search)",
    f"""CREATE TABLE leases (
        session_id {_SESSION_ID} PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        token TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started TEXT,
        acquired_at DOUBLE PRECISION NOT NULL,
        heartbeat_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE legacy_imports (
        name TEXT PRIMARY KEY,
        mtime_ns BIGINT NOT NULL,
        updated_at DOUBLE PRECISION
    )""",
    f"""CREATE TABLE session_frames (
        session_id {_SESSION_ID} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    f"""CREATE TABLE session_compactions (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id {_SESSION_ID} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        covered INTEGER NOT NULL,
        head TEXT NOT NULL,
        method TEXT NOT NULL,
        before_tokens BIGINT NOT NULL,
        after_tokens BIGINT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        digest TEXT NOT NULL
    )""",
    "CREATE INDEX session_compactions_by_session ON session_compactions(session_id, id)",
    f"""CREATE TABLE session_pins (
        session_id {_SESSION_ID} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message INTEGER NOT NULL,
        PRIMARY KEY (session_id, message)
    )""",
)

_V2 = (
    """CREATE TABLE checkpoint_blobs (
        key TEXT PRIMARY KEY,
        data BYTEA NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    f"""CREATE TABLE session_checkpoints (
        session_id {_SESSION_ID} NOT NULL,
        turn INTEGER NOT NULL,
        manifest TEXT NOT NULL,
        PRIMARY KEY (session_id, turn)
    )""",
)
"""Undo checkpoints (``checkpoint_rows``): blobs by SHA-256, one JSON manifest per turn. Not
tied to ``sessions`` by a foreign key: a turn's manifest may be written after its session was
deleted by another process, and ``drop`` removes them with the session."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2)


def migrate(conn: psycopg.Connection[Any], shown: str) -> int:
    """Bring the schema of ``conn``'s database up to date; returns the version now in place.

    ``shown`` is the store's URL as errors may name it (redacted). Raises ``ConfigError`` for a
    database of another application and ``SchemaError`` for a newer schema; nothing is written
    in either case.
    """
    target = len(MIGRATIONS)
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    try:
        current = _version(conn, shown)
        if current > target:
            raise SchemaError(
                f"the session database at {shown} has schema version {current}, newer than this"
                f" openheim knows ({target})",
                hint="upgrade openheim, or point store_url at another database",
            )
        if current < target:
            with conn.transaction():
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS openheim_schema (version INTEGER PRIMARY KEY,"
                    " applied_at DOUBLE PRECISION NOT NULL)"
                )
                for version in range(current, target):
                    for statement in MIGRATIONS[version]:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO openheim_schema (version, applied_at) VALUES (%s, %s)",
                        (version + 1, time.time()),
                    )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return target


def _version(conn: psycopg.Connection[Any], shown: str) -> int:
    """The schema version in place: 0 for an empty database; refuses another application's."""
    row = conn.execute(
        "SELECT current_schema() IS NOT NULL,"
        " to_regclass('openheim_schema') IS NOT NULL,"
        " (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())"
    ).fetchone()
    assert row is not None
    has_schema, ours, tables = bool(row[0]), bool(row[1]), int(row[2])
    if not has_schema:
        raise ConfigError(
            f"the session database at {shown} has no schema to create tables in",
            hint="create the schema named first in its search_path, or use the default 'public'",
        )
    if not ours:
        if tables:
            raise ConfigError(
                f"the database at {shown} holds {tables} tables of another application",
                hint="give openheim a database of its own (CREATE DATABASE openheim) in store_url",
            )
        return 0
    found = conn.execute("SELECT MAX(version) FROM openheim_schema").fetchone()
    return int(found[0]) if found is not None and found[0] is not None else 0
