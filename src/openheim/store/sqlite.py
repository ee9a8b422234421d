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

import asyncio
import builtins
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple, Self, TypeVar

from openheim.errors import SessionBusy, SessionNotFound, StoreError
from openheim.messages import Message, Usage
from openheim.store import lease as leases
from openheim.store import tables
from openheim.store.base import (
    MIN_PREFIX,
    Lease,
    SearchHit,
    SessionRecord,
    repair_history,
    title_from,
)
from openheim.store.batches import BatchWriter
from openheim.store.compactions import CompactionLog
from openheim.store.frames import FrameLog
from openheim.store.schema import migrate

_T = TypeVar("_T")
DB_NAME = "openheim.db"
SNIPPET_TOKENS = 12


class LegacyMark(NamedTuple):
    """A Rust history file seen before: its mtime then, and the session's ``updated_at`` after
    the import (None when nothing was imported from it)."""

    mtime_ns: int
    updated_at: float | None


def open_store(data_dir: Path) -> SQLiteStore:
    """The default store, ``data_dir/openheim.db`` (created, private to the user, if missing)."""
    return SQLiteStore(data_dir / DB_NAME)


class SQLiteStore:
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

    def create(
        self,
        *,
        cwd: str,
        provider: str,
        model: str,
        skills: Iterable[str] = (),
        title: str = "",
        parent_id: str | None = None,
    ) -> SessionRecord:
        with self._tx() as conn:
            if parent_id is not None and not tables.exists(conn, parent_id):
                raise SessionNotFound(parent_id, hint="fork from an existing session")
            now = tables.stamp(conn)
            record = SessionRecord(
                id=str(uuid.uuid4()),
                title=title,
                cwd=cwd,
                provider=provider,
                model=model,
                skills=list(skills),
                created_at=now,
                updated_at=now,
                parent_id=parent_id,
            )
            conn.execute(tables.UPSERT, tables.values(record))
        return record

    def get(self, session_id: str) -> SessionRecord:
        key = session_id.strip().lower()
        if len(key) < MIN_PREFIX:
            raise SessionNotFound(session_id, hint=f"give at least {MIN_PREFIX} characters")
        rows = self._read(
            f"SELECT {tables.COLUMNS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 2",
            (key, key + "\U0010ffff"),
        )
        if not rows:
            raise SessionNotFound(session_id)
        if len(rows) > 1 and rows[0]["id"] != key:
            raise SessionNotFound(session_id, hint="several sessions start so: give more of it")
        return tables.record(rows[0])

    def latest(self, cwd: str) -> SessionRecord | None:
        found = self.list(cwd=cwd, limit=1)
        return found[0] if found else None

    def list(
        self, *, cwd: str | None = None, limit: int = 50, before: float | None = None
    ) -> builtins.list[SessionRecord]:
        clauses, params = tables.filters(cwd=cwd, before=before)
        rows = self._read(
            f"SELECT {tables.COLUMNS} FROM sessions {clauses} ORDER BY updated_at DESC LIMIT ?",
            (*params, limit),
        )
        return [tables.record(row) for row in rows]

    def messages(self, session_id: str) -> builtins.list[Message]:
        stored = self._load(session_id)
        repaired = repair_history(stored)
        if repaired != stored:
            self._persist_repair(session_id)
        return repaired

    def append(self, session_id: str, message: Message) -> None:
        with self._tx() as conn:
            row = conn.execute(
                "SELECT message_count, title FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            now = tables.stamp(conn)
            tables.insert_messages(conn, session_id, row["message_count"], [message], now)
            conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, updated_at = ?,"
                " title = ? WHERE id = ?",
                (now, row["title"] or tables.storable(title_from(message)), session_id),
            )

    def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        skills: Iterable[str] | None = None,
        usage: Usage | None = None,
        cost: float | None = None,
    ) -> None:
        title = None if title is None else tables.storable(title)
        changes: dict[str, Any] = {"title": title, "model": model, "provider": provider}
        changes["skills"] = None if skills is None else json.dumps(list(skills))
        changes["cost"] = cost
        if usage is not None:
            changes.update(usage.to_dict())
        changes = {k: v for k, v in changes.items() if v is not None}
        assignments = ", ".join(f"{column} = ?" for column in changes)
        with self._tx() as conn:
            if not tables.exists(conn, session_id):
                raise SessionNotFound(session_id)
            if changes:
                conn.execute(
                    f"UPDATE sessions SET {assignments} WHERE id = ?",
                    (*changes.values(), session_id),
                )

    def delete(self, session_id: str) -> None:
        """Remove the session; ``SessionBusy`` while a prompt in another process holds it."""
        with self._tx() as conn:
            if not tables.exists(conn, session_id):
                raise SessionNotFound(session_id)
            holder = leases.foreign_holder(conn, session_id, timeout=self.lease_timeout)
            if holder is not None:
                raise SessionBusy(session_id, pid=holder.pid, host=holder.host)
            tables.delete_messages(conn, session_id, from_seq=0)
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

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

    def acquire(self, session_id: str) -> Lease:
        with self._tx() as conn:
            token = leases.take(conn, session_id, timeout=self.lease_timeout)
        return SQLiteLease(self, session_id, token)

    def restore(
        self, record: SessionRecord, messages: Sequence[Message], *, replace: bool = False
    ) -> SessionRecord:
        """Write ``record`` and ``messages`` as given; returns the record as stored.

        ``message_count`` follows ``messages``; a ``parent_id`` this store lacks is dropped.
        """
        with self._tx() as conn:
            return tables.restore(conn, record, messages, replace=replace)

    def legacy_marks(self) -> dict[str, LegacyMark]:
        """Every Rust history file seen before, by name (see ``openheim.store.importer``)."""
        rows = self._read("SELECT name, mtime_ns, updated_at FROM legacy_imports", ())
        return {row["name"]: LegacyMark(row["mtime_ns"], row["updated_at"]) for row in rows}

    def import_legacy(
        self,
        name: str,
        mtime_ns: int,
        session: tuple[SessionRecord, Sequence[Message]] | None,
    ) -> bool:
        """Record a Rust history file and, when it is safe, the session read from it.

        A session is written when it is new, or replaced when nothing was appended to it here
        since its last import; one deleted here after its import stays deleted. Pass
        ``session=None`` for a file that could not be read. Returns whether one was written.
        """
        with self._tx() as conn:
            mark = conn.execute(
                "SELECT updated_at FROM legacy_imports WHERE name = ?", (name,)
            ).fetchone()
            imported_at = None if mark is None else mark["updated_at"]
            written = session is not None and tables.legacy_wanted(conn, session[0].id, imported_at)
            if session is not None and written:
                imported_at = tables.restore(conn, *session, replace=True).updated_at
            conn.execute(
                "INSERT OR REPLACE INTO legacy_imports (name, mtime_ns, updated_at)"
                " VALUES (?, ?, ?)",
                (name, mtime_ns, imported_at),
            )
        return written

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def later(self, write: Callable[[], _T]) -> asyncio.Future[_T]:
        """Run ``write`` (calls of this store) on the store's writing thread, committed with
        the writes queued with it (``store.batches``); the future is settled once it is."""
        return self._batches.submit(write)

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

    def _read(self, sql: str, params: Sequence[Any]) -> builtins.list[sqlite3.Row]:
        with self._lock, _failures(self.path):
            return self._conn.execute(sql, params).fetchall()

    def _load(self, session_id: str) -> builtins.list[Message]:
        with self._lock, _failures(self.path):
            stored = tables.load_messages(self._conn, session_id)
            if not stored and not tables.exists(self._conn, session_id):
                raise SessionNotFound(session_id)
        return stored

    def _persist_repair(self, session_id: str) -> None:
        """Store the repaired history, unless another process's prompt may still be running
        the calls that look unanswered."""
        with self._tx() as conn:
            if leases.foreign_holder(conn, session_id, timeout=self.lease_timeout):
                return
            stored = tables.load_messages(conn, session_id)
            repaired = repair_history(stored)
            first = next(
                (i for i, (a, b) in enumerate(zip(stored, repaired, strict=False)) if a != b),
                len(stored),
            )
            tables.delete_messages(conn, session_id, from_seq=first)
            tables.insert_messages(conn, session_id, first, repaired[first:], time.time())
            conn.execute(
                "UPDATE sessions SET message_count = ? WHERE id = ?", (len(repaired), session_id)
            )


class SQLiteLease(Lease):
    """A lease row in the store's ``leases`` table, identified by a random token."""

    def __init__(self, store: SQLiteStore, session_id: str, token: str) -> None:
        self.session_id = session_id
        self._store = store
        self._token = token
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        with self._store._tx() as conn:
            leases.drop(conn, self.session_id, self._token)
        self._released = True

    def refresh(self) -> None:
        with self._store._tx() as conn:
            leases.renew(conn, self.session_id, self._token)


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
