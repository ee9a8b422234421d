"""The gateway's state in the PostgreSQL store that ``store_url`` names, shared by every
gateway replica: the same tables and SQL as ``state.GatewayState``, prefixed ``gateway_``.

Its tables are created by ``store.pg_extra``'s migrations, applied after the store's own under
the same advisory lock, so replicas starting together migrate once. Leases are timed by the
database's clock, so replicas on machines whose clocks differ agree on when one expired.

One connection, opened again after a failure: a failing server is retried a bounded number of
times, each failure logged in one line; then the ``StoreError`` propagates (the gateway stops,
and what it stored stays stored), and every later call fails at once with it. Every call is
one short autocommit statement, made from the state's worker thread (the gateway calls it
through ``off_loop``, so a slow or unreachable server never holds the event loop); the lock
keeps the calls of any thread one at a time on the connection, so an outage is retried once,
not by each waiting call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from openheim.errors import StoreError
from openheim.gateway.state import GatewayState, Result
from openheim.store import pg_extra, pg_link

log = logging.getLogger(__name__)

RETRIES = 4
"""Tries of one statement after the first fails for the server's sake (0.5, 1, 2, 4 s apart)."""


class PgGatewayState(GatewayState):
    """``GatewayState`` in the PostgreSQL database at ``url``."""

    prefix = "gateway_"
    order = "seq"

    def __init__(self, url: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        """Connect and migrate (the parent's SQLite file is not opened)."""
        self.url = pg_link.checked(url)
        self.shown = pg_link.redacted(self.url)
        self._sleep = sleep
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._failed: StoreError | None = None
        """The error of the outage the retries did not outlast: the gateway stops on it."""
        with pg_link.failures(self.url):
            self._conn = pg_link.connect(self.url)
            try:
                pg_extra.migrate(self._conn, self.shown)
            except BaseException:
                self.close()
                raise
        self._forget_old()

    def _exec(self, sql: str, parameters: tuple[Any, ...] = ()) -> Result:
        with self._lock:  # held through the retries: callers waiting meanwhile share them
            if self._failed is not None:
                raise self._failed
            for attempt in range(RETRIES + 1):
                try:
                    return self._once(sql.format(p=self.prefix), parameters)
                except StoreError as err:
                    if attempt == RETRIES:
                        self._failed = err
                        raise
                    wait = 0.5 * 2**attempt
                    log.warning("gateway state: %s; trying again in %.1f s", err, wait)
                    self._sleep(wait)
        raise AssertionError("unreachable")

    def _once(self, sql: str, parameters: tuple[Any, ...]) -> Result:
        """One statement on the connection (opened again when the last one failed)."""
        try:
            with pg_link.failures(self.url):
                if self._conn is None:
                    self._conn = pg_link.connect(self.url)
                cursor = pg_link.Link(self._conn).execute(sql, parameters)
                width = len(cursor.description or ())
                rows = cursor.fetchall() if width else []
        except StoreError:
            self._drop()
            raise
        return Result(cursor.rowcount, [tuple(row[i] for i in range(width)) for row in rows])

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _now(self) -> float:
        return float(self._exec("SELECT extract(epoch FROM clock_timestamp())::float8").rows[0][0])

    def close(self) -> None:
        self._stop_worker()
        with self._lock:
            self._drop()
