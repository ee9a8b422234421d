"""``CheckpointRows``: undo checkpoints kept in the store's own database, as bytes.

With the PostgreSQL store every machine sharing the database must undo the same turns, so the
file contents a turn changed (blobs, named by their SHA-256, stored once) and each turn's JSON
manifest are rows there instead of files under one machine's ``data_dir``. This module knows
nothing of their content; ``runtime.stored_checkpoints`` reads and checks it. The SQLite store
keeps its checkpoints in files (``runtime.checkpoints``) and has none of these.
"""

from __future__ import annotations

import time
from typing import Any

from openheim.store.tables import TableSet


class CheckpointRows(TableSet):
    """The ``checkpoint_blobs`` and ``session_checkpoints`` tables of one store."""

    def put_blob(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key`` unless a blob of that key is there."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO checkpoint_blobs (key, data, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, data, time.time()),
            )

    def blob(self, key: str) -> bytes | None:
        rows = self._read("SELECT data FROM checkpoint_blobs WHERE key = ?", (key,))
        return bytes(rows[0]["data"]) if rows else None

    def save(self, session_id: str, turn: int, manifest: bytes) -> None:
        """Store (or replace) the manifest of one turn."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO session_checkpoints (session_id, turn, manifest) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id, turn) DO UPDATE SET manifest = excluded.manifest",
                (session_id, turn, manifest.decode("utf-8")),
            )

    def manifests(self, session_id: str | None = None) -> list[bytes]:
        """The manifests of one session, oldest turn first, or of every session."""
        where, params = ("WHERE session_id = ?", [session_id]) if session_id else ("", [])
        rows = self._read(
            f"SELECT manifest FROM session_checkpoints {where} ORDER BY session_id, turn", params
        )
        return [str(row["manifest"]).encode("utf-8") for row in rows]

    def remove(self, session_id: str, turn: int | None = None) -> None:
        """Forget one turn's manifest, or every one of the session."""
        where: str = "session_id = ?"
        params: tuple[Any, ...] = (session_id,)
        if turn is not None:
            where, params = "session_id = ? AND turn = ?", (session_id, turn)
        with self._tx() as conn:
            conn.execute(f"DELETE FROM session_checkpoints WHERE {where}", params)

    def prune_blobs(self, named: set[str], cutoff: float) -> int:
        """Delete the blobs not in ``named`` created at or before ``cutoff``; how many."""
        rows = self._read("SELECT key FROM checkpoint_blobs WHERE created_at <= ?", (cutoff,))
        stale = [(row["key"],) for row in rows if row["key"] not in named]
        if stale:
            with self._tx() as conn:
                conn.executemany("DELETE FROM checkpoint_blobs WHERE key = ?", stale)
        return len(stale)
