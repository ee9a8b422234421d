"""The gateway's state in the PostgreSQL store that ``store_url`` names, shared by every
gateway replica: the same tables and SQL as ``state.GatewayState``, prefixed ``gateway_``.

Its tables have their own versioned migrations (``openheim_gateway_schema``), applied after
the store's own (``store.pg_schema``) under the same advisory lock, so replicas starting
together migrate once. Leases are timed by the database's clock, so replicas on machines whose
clocks differ agree on when one expired.

A failing server is retried a bounded number of times, each failure logged in one line; then
the ``StoreError`` propagates (the gateway stops, and what it stored stays stored).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg

from openheim.errors import SchemaError, StoreError
from openheim.gateway.state import GatewayState, Result
from openheim.store import pg_link, pg_schema

log = logging.getLogger(__name__)

RETRIES = 4
"""Tries of one statement after the first fails for the server's sake (0.5, 1, 2, 4 s apart)."""
POOL_SIZE = 2

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
)
MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1,)


def migrate(conn: psycopg.Connection[Any], shown: str) -> int:
    """The store's schema, then the gateway's, brought up to date; the gateway's version."""
    pg_schema.migrate(conn, shown)
    target = len(MIGRATIONS)
    conn.execute("SELECT pg_advisory_lock(%s)", (pg_schema.LOCK_KEY,))
    try:
        with conn.transaction():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS openheim_gateway_schema (version INTEGER PRIMARY KEY,"
                " applied_at DOUBLE PRECISION NOT NULL)"
            )
            row = conn.execute("SELECT MAX(version) FROM openheim_gateway_schema").fetchone()
            current = int(row[0]) if row is not None and row[0] is not None else 0
            if current > target:
                raise SchemaError(
                    f"the gateway's tables at {shown} have schema version {current}, newer than"
                    f" this openheim knows ({target})",
                    hint="upgrade openheim, or point store_url at another database",
                )
            for version in range(current, target):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO openheim_gateway_schema (version, applied_at) VALUES (%s, %s)",
                    (version + 1, time.time()),
                )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (pg_schema.LOCK_KEY,))
    return target


class PgGatewayState(GatewayState):
    """``GatewayState`` in the PostgreSQL database at ``url``."""

    prefix = "gateway_"
    order = "seq"

    def __init__(self, url: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        """Connect, migrate, open a small pool (the parent's SQLite file is not opened)."""
        self.url = pg_link.checked(url)
        self.shown = pg_link.redacted(self.url)
        self._sleep = sleep
        with pg_link.failures(self.url), pg_link.connect(self.url) as conn:
            migrate(conn, self.shown)
        with pg_link.failures(self.url):
            self._pool = pg_link.pool(self.url, POOL_SIZE)
        self._forget_old()

    def _exec(self, sql: str, parameters: tuple[Any, ...] = ()) -> Result:
        for attempt in range(RETRIES + 1):
            try:
                return self._once(sql.format(p=self.prefix), parameters)
            except StoreError as err:
                if attempt == RETRIES:
                    raise
                wait = 0.5 * 2**attempt
                log.warning("gateway state: %s; trying again in %.1f s", err, wait)
                self._sleep(wait)
        raise AssertionError("unreachable")

    def _once(self, sql: str, parameters: tuple[Any, ...]) -> Result:
        with pg_link.failures(self.url), self._pool.connection() as conn:
            cursor = pg_link.Link(conn).execute(sql, parameters)
            width = len(cursor.description or ())
            rows = cursor.fetchall() if width else []
            return Result(cursor.rowcount, [tuple(row[i] for i in range(width)) for row in rows])

    def _now(self) -> float:
        return float(self._exec("SELECT extract(epoch FROM clock_timestamp())::float8").rows[0][0])

    def close(self) -> None:
        self._pool.close()
