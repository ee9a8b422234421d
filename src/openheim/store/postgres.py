"""The PostgreSQL session store: the same ``SessionStore`` as SQLite's, in a database that
several openheim processes on several machines share (``store_url = "postgresql://..."``).

Connections come from a psycopg pool. Every write is one transaction (a savepoint inside a
batch's, as with SQLite) that first takes one transaction-level advisory lock: writes are
serialised as SQLite's ``BEGIN IMMEDIATE`` serialises them, so a session's message numbers,
its lease and the store-wide unique ``updated_at`` need no other locking, and no two writers
ever wait on each other's rows (no deadlock). The frame log's batches are the exception: they
only upsert and trim the frames of sessions whose prompts run in the writing process (the
lease), so they take no lock and never queue behind the writes of every other replica. Reads
take no lock and see committed writes.
Search uses PostgreSQL's own text search (``pg_schema``), snippets by ``ts_headline``.

The schema is created or brought up to date on opening (``pg_schema.migrate``); a wrong URL,
an unreachable server, a database of another application or a newer schema each fail there
with a one-line error that never shows the URL's password.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from openheim.messages import Message
from openheim.store import pg_link, pg_pipeline, pg_schema
from openheim.store.base import SearchHit
from openheim.store.batches import BatchWriter
from openheim.store.checkpoint_rows import CheckpointRows
from openheim.store.common import SqlStore
from openheim.store.compactions import CompactionLog
from openheim.store.frame_notices import payloads
from openheim.store.frames import FrameLog, batch_json, gone
from openheim.store.tables import Connection, body_json, search_text

FRAMES_CHANNEL = "openheim_frames"
"""The ``NOTIFY`` channel of frames stored: lines of ``"<seq> <session id>"``, the highest
number stored per session of a batch (``store.frame_notices``; sent on commit, so a listener
finds the frames already there)."""
CONTROL_CHANNEL = "openheim_control"
"""The ``NOTIFY`` channel of what one replica asks of the prompt another runs (JSON)."""
LEASE_TIMEOUT = 10.0
"""Seconds without a heartbeat before a lease held on another machine is stale: a replica
killed mid-turn frees its sessions within this bound."""
POOL_SIZE = 8
"""Connections a store opens at most (reads run in parallel; writes queue on one lock)."""
SNIPPET_WORDS = 12


class PostgresStore(SqlStore):
    """``SessionStore`` on a PostgreSQL database; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        lease_timeout: float = LEASE_TIMEOUT,
        pool_size: int = POOL_SIZE,
    ) -> None:
        """Connect to ``url``, migrate its schema, and open the pool.

        ``lease_timeout``: seconds without a heartbeat before another host's lease is stale.
        """
        self.url = pg_link.checked(url)
        self.shown = pg_link.redacted(self.url)
        self.lease_timeout = lease_timeout
        self._local = threading.local()
        with pg_link.failures(self.url), pg_link.connect(self.url) as conn:
            pg_schema.migrate(conn, self.shown)
        with pg_link.failures(self.url):
            self._pool = pg_link.pool(self.url, pool_size)
        self._closed = False
        self.frames: FrameLog = _Frames(self._unlocked_tx, self._read)
        self._batches = BatchWriter(self._tx)
        self.compactions = CompactionLog(self._tx, self._read)
        self.checkpoint_rows = CheckpointRows(self._tx, self._read)

    def search(self, text: str, *, limit: int = 20) -> builtins.list[SearchHit]:
        words = text.split()
        if not words:
            return []
        query = " && ".join("phraseto_tsquery('openheim_search', ?)" for _ in words)
        rows = self._read(
            "SELECT session_id, title, ts_headline('openheim_search', text, q,"
            f" 'StartSel=**, StopSel=**, MaxWords={SNIPPET_WORDS}, MinWords=3') AS snippet"
            " FROM (SELECT DISTINCT ON (m.session_id) m.session_id, s.title, m.text, q,"
            " ts_rank(m.search, q) AS rank"
            f" FROM messages m JOIN sessions s ON s.id = m.session_id, (SELECT {query}) AS t(q)"
            " WHERE m.search @@ q ORDER BY m.session_id, rank DESC, m.id) best"
            " ORDER BY rank DESC, session_id LIMIT ?",
            (*words, limit),
        )
        return [SearchHit(row["session_id"], row["title"], row["snippet"]) for row in rows]

    def notify(self, payload: str) -> None:
        """Send ``payload`` on ``CONTROL_CHANNEL`` to every replica listening."""
        with self._reader() as conn:
            conn.execute("SELECT pg_notify(?, ?)", (CONTROL_CHANNEL, payload))

    def close(self) -> None:
        """Write what is queued and close the pool; closing twice does nothing."""
        self._batches.close()
        if not self._closed:
            self._closed = True
            self._pool.close()

    def _tx(self) -> AbstractContextManager[Connection]:
        """One write transaction holding the store's write lock; nested, a savepoint of the
        transaction this thread is in (undone alone when the write fails)."""
        return self._write(pg_schema.WRITE_KEY)

    def _unlocked_tx(self) -> AbstractContextManager[Connection]:
        """The frame log's write transaction, without the write lock (see the docstring);
        nested, a savepoint too (a batch's, or ``sessions migrate``'s, whose session is not
        committed yet when its frames are written)."""
        return self._write(None)

    @contextmanager
    def _write(self, lock: int | None) -> Iterator[Connection]:
        """A write transaction whose statements are pipelined (``pg_pipeline``), holding the
        advisory lock ``lock`` when one is given; a savepoint when this thread is in one."""
        link: pg_link.Link | None = getattr(self._local, "link", None)
        with pg_link.failures(self.url):
            if link is not None:
                with pg_pipeline.savepoint(link):
                    yield link
                return
            with self._pool.connection() as conn, pg_pipeline.transaction(conn, lock) as link:
                self._local.link = link
                try:
                    yield link
                finally:
                    self._local.link = None

    @contextmanager
    def _reader(self) -> Iterator[Connection]:
        link: pg_link.Link | None = getattr(self._local, "link", None)
        with pg_link.failures(self.url):
            if link is not None:
                yield link
                return
            with self._pool.connection() as conn:
                yield pg_link.Link(conn)

    def _insert_messages(
        self, conn: Connection, session_id: str, seq: int, messages: Iterable[Message], now: float
    ) -> None:
        rows = [
            (session_id, seq + i, m.role, body_json(m), search_text(m), now)
            for i, m in enumerate(messages)
        ]
        if rows:
            conn.executemany(
                "INSERT INTO messages (session_id, seq, role, body, text, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def _delete_messages(self, conn: Connection, session_id: str, *, from_seq: int) -> None:
        where = "session_id = ? AND seq >= ?"
        conn.execute(f"DELETE FROM messages WHERE {where}", (session_id, from_seq))


class _Frames(FrameLog):
    """The frame log with PostgreSQL's upsert, and ``NOTIFY`` on ``FRAMES_CHANNEL`` of the
    sessions of each batch (sent in the same pipeline, delivered once the batch commits); a
    deleted session's frames are refused at the commit (the inserts are pipelined), where
    ``SessionNotFound`` is raised."""

    def append(self, frames: Sequence[tuple[str, int, str]]) -> None:
        try:
            super().append(frames)
        except psycopg.errors.ForeignKeyViolation:
            raise gone(frames) from None

    def _insert(self, conn: Connection, frames: Sequence[tuple[str, int, str]]) -> None:
        """One statement for the whole batch, sent as one JSON text (a row per statement cost
        the writing thread and the server several times as much, and arrays of text cost
        psycopg a regular expression per item, with the interpreter lock held); a number sent
        twice keeps its last text, as an upsert can touch a row once per statement."""
        rows = {(session_id, seq): body for session_id, seq, body in frames}
        conn.execute(
            "INSERT INTO session_frames (session_id, seq, body)"
            " SELECT r->>0, (r->>1)::bigint, r->>2 FROM json_array_elements(?::json) AS r"
            " ON CONFLICT (session_id, seq) DO UPDATE SET body = excluded.body",
            (batch_json((sid, seq, body) for (sid, seq), body in rows.items()),),
        )
        last: dict[str, int] = {}
        for session_id, seq in rows:
            last[session_id] = max(seq, last.get(session_id, 0))
        conn.executemany(
            "SELECT pg_notify(?, ?)", [(FRAMES_CHANNEL, text) for text in payloads(last)]
        )

    def _rows_after(self, wanted: Sequence[tuple[str, int]]) -> list[Any]:
        """The wanted sessions as two arrays: a long ``OR`` of each costs PostgreSQL
        milliseconds of planning."""
        return self._read(
            "SELECT f.session_id, f.seq, f.body FROM session_frames f"
            " JOIN unnest(?::text[], ?::bigint[]) AS w(session_id, after)"
            " ON f.session_id = w.session_id AND f.seq > w.after ORDER BY f.session_id, f.seq",
            ([sid for sid, _ in wanted], [seq for _, seq in wanted]),
        )
