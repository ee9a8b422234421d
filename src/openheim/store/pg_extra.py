"""The PostgreSQL tables of the parts that share the store's database beyond the sessions: the
gateway's state (``gateway_*``, see ``gateway/pg_state.py``), ``serve``'s one-time login
codes (``server_login_codes``, see ``serving/login_codes.py``) and long-term memory
(``memories``, see ``memory/pg_db.py``).

They have their own versioned migrations (``openheim_extra_schema``: one row per migration
applied), run after the store's own (``pg_schema``) and under the same advisory lock, so
replicas starting together migrate once and the store's checks (a database of another
application, a newer schema) come first.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from openheim.errors import SchemaError
from openheim.store import pg_schema

_V1 = (
    """CREATE TABLE gateway_inbox (
        platform TEXT NOT NULL, message_id TEXT NOT NULL, record TEXT,
        handled INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY, PRIMARY KEY (platform, message_id))""",
    "CREATE INDEX gateway_inbox_unhandled ON gateway_inbox(platform, handled, at, seq)",
    """CREATE TABLE gateway_grants (
        platform TEXT NOT NULL, sender TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (platform, sender))""",
    """CREATE TABLE gateway_rate (
        platform TEXT NOT NULL, sender TEXT NOT NULL, "window" DOUBLE PRECISION NOT NULL,
        count INTEGER NOT NULL, PRIMARY KEY (platform, sender))""",
    "CREATE TABLE gateway_conversations (key TEXT PRIMARY KEY, session_id TEXT, model TEXT)",
    "CREATE TABLE gateway_cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE gateway_leaders (
        name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE server_login_codes (
        digest TEXT PRIMARY KEY, expires DOUBLE PRECISION NOT NULL)""",
)
"""The gateway's tables as SQLite's ``gateway.db`` has them (``gateway/state.py``), prefixed,
the inbox ordered by an identity column instead of SQLite's rowid; the login codes by their
SHA-256 (the codes themselves are secrets)."""

_V2 = (
    """CREATE TABLE memories (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        text TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '',
        created TEXT NOT NULL, updated TEXT NOT NULL,
        embedding BYTEA, embedding_model TEXT,
        search TSVECTOR GENERATED ALWAYS AS
            (to_tsvector('openheim_search', text || ' ' || tags)) STORED)""",
    "CREATE INDEX memories_search ON memories USING GIN (search)",
    "CREATE INDEX memories_by_updated ON memories(updated, id)",
)
"""Long-term memory (``memory/pg_db.py``), as SQLite's ``memory.db`` has it, searched by the
store's text search configuration."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2)


def migrate(conn: psycopg.Connection[Any], shown: str) -> int:
    """The store's schema, then these tables, brought up to date; their version now.

    ``shown`` is the URL as errors may name it (redacted). A newer version of these tables is
    a ``SchemaError``, with nothing written.
    """
    pg_schema.migrate(conn, shown)
    target = len(MIGRATIONS)
    conn.execute("SELECT pg_advisory_lock(%s)", (pg_schema.LOCK_KEY,))
    try:
        with conn.transaction():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS openheim_extra_schema (version INTEGER PRIMARY KEY,"
                " applied_at DOUBLE PRECISION NOT NULL)"
            )
            row = conn.execute("SELECT MAX(version) FROM openheim_extra_schema").fetchone()
            current = int(row[0]) if row is not None and row[0] is not None else 0
            if current > target:
                raise SchemaError(
                    f"the gateway's and server's tables at {shown} have schema version"
                    f" {current}, newer than this openheim knows ({target})",
                    hint="upgrade openheim, or point store_url at another database",
                )
            for version in range(current, target):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO openheim_extra_schema (version, applied_at) VALUES (%s, %s)",
                    (version + 1, time.time()),
                )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (pg_schema.LOCK_KEY,))
    return target
