"""The embedded session store: one SQLite file in WAL mode, ``data_dir/openheim.db``.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a killed process leaves each message
either stored whole or not at all. ``synchronous=NORMAL`` is the right trade with WAL: a commit
survives any crash of the process (the log is in the OS before ``COMMIT`` returns) and the file
never corrupts; only a power cut or kernel panic can lose the last few commits, and ``FULL``
would pay an fsync per message for that. One connection serves the process behind a lock;
calls are short enough (an append is well under a millisecond) for async callers to make them
directly. Other processes share the file safely; SQLite serialises their writes.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from openheim.errors import StoreError
from openheim.messages import Message
from openheim.store import lease as leases
from openheim.store import tables
from openheim.store.base import SearchHit
from openheim.store.batches import BatchWriter
from openheim.store.common import LegacyMark as LegacyMark
from openheim.store.common import SqlLease, SqlStore
from openheim.store.compactions import CompactionLog
from openheim.store.frames import FrameLog
from openheim.store.schema import migrate
from openheim.store.tables import Connection

DB_NAME = "openheim.db"
SNIPPET_TOKENS = 12


def open_store(data_dir: Path) -> SQLiteStore:
    """The default store, ``data_dir/openheim.db`` (created, private to the user, if missing)."""
    return SQLiteStore(data_dir / DB_NAME)


class SQLiteStore(SqlStore):
    """``SessionStore`` on one SQLite file; see the module docstring for the guarantees."""

    def __init__(
        self,
        path: Path | str,
        *,
        lease_timeout: float = leases.HEARTBEAT_TIMEOUT,
        busy_timeout: float = 10.0,
    ) -> None:
        """Open (creating if missing) the database at ``path`` and bring its schema up to date.

        ``lease_timeout``: seconds without a heartbeat before another host's lease is stale.
        ``busy_timeout``: seconds to wait for another process's write before ``StoreError``.
        """
        self.path = Path(path)
        self.lease_timeout = lease_timeout
        self._lock = threading.RLock()
        self._closed = False
        with _failures(self.path):
            self._conn = _connect(self.path, busy_timeout)
        self.frames = FrameLog(self._tx, self._read)
        self._batches = BatchWriter(self._tx)
        self.compactions = CompactionLog(self._tx, self._read)

    def search(self, text: str, *, limit: int = 20) -> builtins.list[SearchHit]:
        query = tables.fts_query(text)
        if not query:
            return []
        hits: dict[str, SearchHit] = {}
        with self._lock, _failures(self.path):
            rows = self._conn.execute(
                "SELECT m.session_id, s.title,"
                f" snippet(messages_fts, 0, '**', '**', '…', {SNIPPET_TOKENS})"
                " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
                " JOIN sessions s ON s.id = m.session_id"
                " WHERE messages_fts MATCH ? ORDER BY messages_fts.rank",
                (query,),
            )
            for session_id, title, snippet in rows:
                hits.setdefault(session_id, SearchHit(session_id, title, snippet))
                if len(hits) >= limit:
                    break
        return list(hits.values())

    def close(self) -> None:
        """Close the connection (after ``PRAGMA optimize``); closing twice does nothing."""
        self._batches.close()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with suppress(sqlite3.OperationalError):
                self._conn.execute("PRAGMA optimize")
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking the write lock up front (no upgrade deadlocks); inside
        a batch's transaction, a savepoint of it, undone alone when the write fails."""
        with self._lock, _failures(self.path):
            nested = self._conn.in_transaction
            self._conn.execute("SAVEPOINT write" if nested else "BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("RELEASE write" if nested else "COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    for undo in ("ROLLBACK TO write", "RELEASE write") if nested else ("ROLLBACK",):
                        self._conn.execute(undo)
                raise

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        with self._lock, _failures(self.path):
            yield self._conn

    def _insert_messages(
        self, conn: Connection, session_id: str, seq: int, messages: Iterable[Message], now: float
    ) -> None:
        tables.insert_messages(conn, session_id, seq, messages, now)

    def _delete_messages(self, conn: Connection, session_id: str, *, from_seq: int) -> None:
        tables.delete_messages(conn, session_id, from_seq=from_seq)


SQLiteLease = SqlLease
"""The lease of a SQLite store (the shared SQL lease)."""


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    with suppress(FileExistsError):  # private to the user: conversations may hold secrets
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
    )
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def _failures(path: Path) -> Iterator[None]:
    """SQLite's operational failures (locked, full, unreadable) as a ``StoreError``."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if type(exc) not in (sqlite3.OperationalError, sqlite3.DatabaseError):
            raise  # an integrity or programming error is a bug, not the disk's fault
        raise StoreError(
            f"the session database {path} failed: {exc}",
            hint="check free disk space and permissions; if another openheim holds it locked,"
            " wait for it or stop it",
        ) from exc
