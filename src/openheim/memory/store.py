"""MemoryStore: long-term memory the agent writes and searches through its tools.

Keyword search is FTS5 with BM25 ranking. With an embedder, each memory also gets a vector and
search ranks by cosine similarity; memories stored while embedding failed have no vector, so their
keyword matches are listed after the semantic ones. When embedding fails the store falls back to
keyword search and says so in the result's ``note`` rather than failing the call. The database
file is opened (and created) on first use; a bad file is a ConfigError at that point.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from openheim.errors import ProviderError
from openheim.memory.db import Hit, Memory, MemoryDB, MemoryTables
from openheim.memory.embeddings import Embedder, cosine, pack, unpack

log = logging.getLogger(__name__)
R = TypeVar("R")


@dataclass(frozen=True)
class Saved:
    """A stored memory; ``note`` says why it has no vector when embedding it failed."""

    memory: Memory
    note: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """Hits, best first; ``semantic`` when ranked by vectors, ``note`` on a fallback."""

    hits: list[Hit]
    semantic: bool
    note: str | None = None


class MemoryStore:
    """Memories in one SQLite file (or the PostgreSQL store at ``url``), optionally with an
    embedder for semantic search."""

    def __init__(
        self, path: Path, *, embedder: Embedder | None = None, url: str | None = None
    ) -> None:
        self.path = path
        self.url = url
        self.embedder = embedder
        self._db: MemoryTables | None = None
        self._open_lock = threading.Lock()

    def close(self) -> None:
        with self._open_lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    async def remember(self, text: str, tags: Sequence[str] = ()) -> Saved:
        """Store ``text`` with ``tags`` (and its vector when an embedder is set)."""
        vector, note = await self._vector(text, "stored it without")
        memory = await self._run(lambda db: db.insert(text, tags, vector, self._model))
        return Saved(memory, note)

    async def edit(self, id_: int, text: str) -> Saved | None:
        """Replace the text of memory ``id_`` (re-embedding it); None when there is none."""
        vector, note = await self._vector(text, "saved the new text without")
        memory = await self._run(lambda db: db.update(id_, text, vector, self._model))
        return None if memory is None else Saved(memory, note)

    async def forget(self, id_: int) -> Memory | None:
        """Delete memory ``id_`` and return it; None when there is none."""
        return await self._run(lambda db: db.delete(id_))

    async def get(self, id_: int) -> Memory | None:
        """Memory ``id_``, or None when there is none."""
        return await self._run(lambda db: db.get(id_))

    async def recent(self, limit: int) -> list[Memory]:
        """The ``limit`` most recently updated memories, newest first (to list them)."""
        return await self._run(lambda db: db.recent(limit))

    async def search(self, query: str, limit: int) -> SearchResult:
        """The best ``limit`` matches of ``query``: by meaning with an embedder, else by words."""
        note = None
        if self.embedder is not None:
            try:
                wanted = unpack(pack(await self.embedder.embed(query)))
            except ProviderError as err:
                log.warning("embedding a memory search failed: %s", err)
                note = f"embedding the query failed ({err}), so these are keyword search results"
            else:
                model = self.embedder.model
                hits = await self._run(lambda db: _semantic(db, model, wanted, query, limit))
                return SearchResult(hits, semantic=True)
        hits = await self._run(lambda db: db.keyword_search(query, limit))
        return SearchResult(hits, semantic=False, note=note)

    def _database(self) -> MemoryTables:
        """The database, opened on first use: a session that never uses memory makes no file."""
        with self._open_lock:
            if self._db is None:
                self._db = self._open()
            return self._db

    def _open(self) -> MemoryTables:
        if self.url is None:
            return MemoryDB(self.path)
        from openheim.memory.pg_db import PgMemoryDB  # psycopg only with a store_url

        return PgMemoryDB(self.url)

    async def _run(self, call: Callable[[MemoryTables], R]) -> R:
        """``call(db)`` in a worker thread, so the database never blocks the event loop."""
        return await asyncio.to_thread(lambda: call(self._database()))

    @property
    def _model(self) -> str | None:
        return None if self.embedder is None else self.embedder.model

    async def _vector(self, text: str, action: str) -> tuple[bytes | None, str | None]:
        """The packed vector of ``text``, or None and a note saying why there is none."""
        if self.embedder is None:
            return None, None
        try:
            return pack(await self.embedder.embed(text)), None
        except ProviderError as err:
            log.warning("embedding a memory failed: %s", err)
            return None, (
                f"embedding failed ({err}); {action} a vector, so only keyword search finds it"
            )


def _semantic(
    db: MemoryTables, model: str, wanted: Sequence[float], query: str, limit: int
) -> list[Hit]:
    """Cosine-ranked memories, then keyword matches among memories without a vector."""
    scored = [
        Hit(memory, cosine(wanted, vector), "semantic")
        for memory, blob in db.vectors(model)
        if len(vector := unpack(blob)) == len(wanted)
    ]
    scored.sort(key=lambda hit: (-hit.score, hit.memory.id))
    return scored[:limit] + db.keyword_search(query, limit, unembedded_for=model)
