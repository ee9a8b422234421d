"""``SqlStore``: the ``SessionStore`` methods both SQL backends share, written once.

A backend (``sqlite.SQLiteStore``, ``postgres.PostgresStore``) supplies a write transaction
(``_tx``, a savepoint when nested), a connection to read with (``_reader``), its search and its
close, and how a message's search text is stored (``_insert_messages``, ``_delete_messages``).
Both serialise their write transactions (SQLite's write lock, a PostgreSQL advisory lock), so
the SQL here, the subset both speak with ``?`` placeholders, needs no row locks.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Self, TypeVar

from openheim.errors import SessionBusy, SessionExists, SessionNotFound
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
from openheim.store.checkpoint_rows import CheckpointRows
from openheim.store.compactions import CompactionLog
from openheim.store.frames import FrameLog
from openheim.store.tables import Connection

_T = TypeVar("_T")


class LegacyMark(NamedTuple):
    """A Rust history file seen before: its mtime then, and the session's ``updated_at`` after
    the import (None when nothing was imported from it)."""

    mtime_ns: int
    updated_at: float | None


class SqlStore:
    """The shared half of a SQL ``SessionStore``; see the module docstring for the hooks."""

    lease_timeout: float
    frames: FrameLog
    compactions: CompactionLog
    checkpoint_rows: CheckpointRows | None = None
    """Undo checkpoints in the database (PostgreSQL's); None: in files under ``data_dir``."""
    _batches: BatchWriter

    def _tx(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _reader(self) -> AbstractContextManager[Connection]:
        """A connection to read with (inside a write transaction of this thread, that one)."""
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        with self._reader() as conn:
            return builtins.list(conn.execute(sql, params).fetchall())

    def _insert_messages(
        self, conn: Connection, session_id: str, seq: int, messages: Iterable[Message], now: float
    ) -> None:
        raise NotImplementedError

    def _delete_messages(self, conn: Connection, session_id: str, *, from_seq: int) -> None:
        raise NotImplementedError

    def search(self, text: str, *, limit: int = 20) -> builtins.list[SearchHit]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

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

    def stored_messages(self, session_id: str) -> builtins.list[Message]:
        """The messages exactly as stored, unrepaired and without writing anything (a copy of
        the store must not change its source)."""
        return self._load(session_id)

    def transaction(self) -> AbstractContextManager[Connection]:
        """One write transaction: this thread's writes to the store inside it commit together
        (each a savepoint of it), or none does when it fails."""
        return self._tx()

    def messages(self, session_id: str) -> builtins.list[Message]:
        stored = self._load(session_id)
        repaired = repair_history(stored)
        if repaired != stored:
            self._persist_repair(session_id)
        return repaired

    def append(self, session_id: str, message: Message) -> None:
        with self._tx() as conn:
            # both queries asked before either answer is read: one round trip on PostgreSQL
            found = conn.execute(
                "SELECT message_count, title FROM sessions WHERE id = ?", (session_id,)
            )
            now = tables.stamp(conn)
            row = found.fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            self._insert_messages(conn, session_id, row["message_count"], [message], now)
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
            self._delete_messages(conn, session_id, from_seq=0)
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def acquire(self, session_id: str) -> Lease:
        with self._tx() as conn:
            token = leases.take(conn, session_id, timeout=self.lease_timeout)
        return SqlLease(self, session_id, token)

    def restore(
        self, record: SessionRecord, messages: Sequence[Message], *, replace: bool = False
    ) -> SessionRecord:
        """Write ``record`` and ``messages`` as given; returns the record as stored.

        ``message_count`` follows ``messages``; a ``parent_id`` this store lacks is dropped.
        """
        with self._tx() as conn:
            return self._restore(conn, record, messages, replace=replace)

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
                imported_at = self._restore(conn, *session, replace=True).updated_at
            conn.execute(
                "INSERT INTO legacy_imports (name, mtime_ns, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET mtime_ns = excluded.mtime_ns,"
                " updated_at = excluded.updated_at",
                (name, mtime_ns, imported_at),
            )
        return written

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def held_elsewhere(self, session_id: str) -> bool:
        with self._reader() as conn:
            holder = leases.foreign_holder(conn, session_id, timeout=self.lease_timeout)
        return holder is not None

    def later(self, write: Callable[[], _T]) -> asyncio.Future[_T]:
        """Run ``write`` (calls of this store) on the store's writing thread, committed with
        the writes queued with it (``store.batches``); the future is settled once it is."""
        return self._batches.submit(write)

    def _restore(
        self, conn: Connection, record: SessionRecord, messages: Sequence[Message], *, replace: bool
    ) -> SessionRecord:
        if tables.exists(conn, record.id):
            if not replace:
                raise SessionExists(record.id)
            self._delete_messages(conn, record.id, from_seq=0)
        stored = tables.restored(conn, record, len(messages))
        conn.execute(tables.UPSERT, tables.values(stored))
        self._insert_messages(conn, record.id, 0, messages, time.time())
        return stored

    def _load(self, session_id: str) -> builtins.list[Message]:
        with self._reader() as conn:
            stored = tables.load_messages(conn, session_id)
            if not stored and not tables.exists(conn, session_id):
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
            self._delete_messages(conn, session_id, from_seq=first)
            self._insert_messages(conn, session_id, first, repaired[first:], time.time())
            conn.execute(
                "UPDATE sessions SET message_count = ? WHERE id = ?", (len(repaired), session_id)
            )


class SqlLease(Lease):
    """A lease row in the store's ``leases`` table, identified by a random token."""

    def __init__(self, store: SqlStore, session_id: str, token: str) -> None:
        self.session_id = session_id
        self.timeout = store.lease_timeout
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
