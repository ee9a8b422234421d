"""Long-term memory in the PostgreSQL store that ``store_url`` names, shared by every process
and machine on it: the same operations as ``db.MemoryDB`` (SQLite FTS5 with BM25).

Keyword search is PostgreSQL's text search over the text and tags (the store's
``openheim_search`` configuration: English stemming, no stop words), any word matching, ranked
by ``ts_rank`` normalised by length; vectors are ``bytea`` as SQLite keeps them. The table is
created by ``store.pg_extra``'s migrations. Ids come from an identity column, so the id of a
forgotten memory is never handed out again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openheim.memory.db import Hit, Memory, memory_of, now_stamp, words_of
from openheim.store import pg_extra, pg_link

_COLUMNS = "id, text, tags, created, updated"
POOL_SIZE = 2


class PgMemoryDB:
    """The ``memories`` table of a PostgreSQL database; thread-safe (a small pool)."""

    def __init__(self, url: str) -> None:
        """Connect to ``url`` and bring the tables up to date (a one-line error when it fails)."""
        self.url = pg_link.checked(url)
        with pg_link.failures(self.url), pg_link.connect(self.url) as conn:
            pg_extra.migrate(conn, pg_link.redacted(self.url))
        with pg_link.failures(self.url):
            self._pool = pg_link.pool(self.url, POOL_SIZE)

    def close(self) -> None:
        self._pool.close()

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[list[Any]]:
        with pg_link.failures(self.url), self._pool.connection() as conn:
            cursor = pg_link.Link(conn).execute(sql, parameters)
            width = len(cursor.description or ())
            return [[row[i] for i in range(width)] for row in cursor.fetchall()] if width else []

    def insert(
        self, text: str, tags: Sequence[str], vector: bytes | None, model: str | None
    ) -> Memory:
        now = now_stamp()
        rows = self._rows(
            "INSERT INTO memories (text, tags, created, updated, embedding, embedding_model)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (text, "\n".join(tags), now, now, vector, model),
        )
        return Memory(int(rows[0][0]), text, tuple(tags), now, now)

    def update(self, id_: int, text: str, vector: bytes | None, model: str | None) -> Memory | None:
        """Replace a memory's text (and its vector); None when there is no such memory."""
        rows = self._rows(
            "UPDATE memories SET text = ?, updated = ?, embedding = ?, embedding_model = ?"
            f" WHERE id = ? RETURNING {_COLUMNS}",
            (text, now_stamp(), vector, model, id_),
        )
        return memory_of(rows[0]) if rows else None

    def delete(self, id_: int) -> Memory | None:
        """Remove a memory and return it; None when there is no such memory."""
        rows = self._rows(f"DELETE FROM memories WHERE id = ? RETURNING {_COLUMNS}", (id_,))
        return memory_of(rows[0]) if rows else None

    def get(self, id_: int) -> Memory | None:
        rows = self._rows(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (id_,))
        return memory_of(rows[0]) if rows else None

    def recent(self, limit: int) -> list[Memory]:
        """The ``limit`` most recently updated memories, newest first."""
        sql = f"SELECT {_COLUMNS} FROM memories ORDER BY updated DESC, id DESC LIMIT ?"
        return [memory_of(row) for row in self._rows(sql, (limit,))]

    def keyword_search(
        self, query: str, limit: int, *, unembedded_for: str | None = None
    ) -> list[Hit]:
        """Matches of any word of ``query``, best first (``MemoryDB.keyword_search``)."""
        words = words_of(query)
        if not words:
            return []
        match = " || ".join("plainto_tsquery('openheim_search', ?)" for _ in words)
        sql = (
            f"SELECT {_COLUMNS}, ts_rank(search, q, 1) AS rank FROM memories,"
            f" (SELECT {match}) AS t(q) WHERE search @@ q"
        )
        params: list[object] = list(words)
        if unembedded_for is not None:
            sql += " AND (embedding IS NULL OR embedding_model IS DISTINCT FROM ?)"
            params.append(unembedded_for)
        sql += " ORDER BY rank DESC, id LIMIT ?"
        params.append(limit)
        return [Hit(memory_of(row), float(row[5])) for row in self._rows(sql, params)]

    def vectors(self, model: str) -> list[tuple[Memory, bytes]]:
        """Every memory with a vector from ``model``, and that vector."""
        rows = self._rows(
            f"SELECT {_COLUMNS}, embedding FROM memories"
            " WHERE embedding IS NOT NULL AND embedding_model = ? ORDER BY id",
            (model,),
        )
        return [(memory_of(row), bytes(row[5])) for row in rows]
