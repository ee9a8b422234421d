"""``FrameLog``: the numbered frames a server sends for each session, kept in the store.

A surface that streams a session's events to clients that may drop and come back (the
WebSocket server) numbers each frame and appends it here; a client that re-attaches, to this
process or to another one sharing the store, reads the frames after the last number it saw.
Only the last ``keep`` frames of a session are kept; they go with the session when it is
deleted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from openheim.errors import SessionNotFound
from openheim.store.tables import Connection, TableSet, storable

DEFAULT_KEEP = 10_000
"""Frames kept per session."""
MANY = 200
"""Sessions read at most per query of ``after_many``."""

_INSERT = """INSERT OR REPLACE INTO session_frames (session_id, seq, body)
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
    FROM json_each(?)"""
"""A whole batch in one statement: SQLite inserts every row in one call, so a writing thread
takes the interpreter lock back once per batch instead of once per row (each of which waits
for the event loop's thread to let go of it, up to a switch interval, while the batch holds
the store's lock)."""


class FrameLog(TableSet):
    """The frame log of one store (``SQLiteStore.frames``; PostgreSQL's overrides ``_insert``)."""

    def __init__(
        self,
        tx: Callable[[], AbstractContextManager[Connection]],
        read: Callable[[str, Sequence[Any]], list[Any]],
        keep: int = DEFAULT_KEEP,
    ) -> None:
        super().__init__(tx, read)
        self.keep = keep

    def append(self, frames: Sequence[tuple[str, int, str]]) -> None:
        """Store ``(session_id, seq, text)`` frames (of any sessions) in one transaction, and
        drop each session's frames past ``keep``; ``SessionNotFound``, nothing stored, when a
        session of the batch is gone (deleted meanwhile)."""
        if not frames:
            return
        last: dict[str, int] = {}
        for session_id, seq, _ in frames:
            last[session_id] = max(seq, last.get(session_id, 0))
        with self._tx() as conn:
            self._insert(conn, frames)
            conn.executemany(
                "DELETE FROM session_frames WHERE session_id = ? AND seq <= ?",
                [(sid, seq - self.keep) for sid, seq in last.items() if seq > self.keep],
            )

    def _insert(self, conn: Connection, frames: Sequence[tuple[str, int, str]]) -> None:
        """Store the frames, replacing any of the same numbers."""
        try:
            conn.execute(_INSERT, (storable(batch_json(frames)),))
        except sqlite3.IntegrityError:
            raise gone(frames) from None

    def after(self, session_id: str, seq: int) -> Iterator[tuple[int, str]]:
        """The kept frames numbered above ``seq``, in order."""
        rows = self._read(
            "SELECT seq, body FROM session_frames WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, seq),
        )
        return ((row["seq"], row["body"]) for row in rows)

    def after_many(self, after: Mapping[str, int]) -> dict[str, list[tuple[int, str]]]:
        """``after`` for several sessions (id to number) in one query per ``MANY`` of them:
        each session's kept frames numbered above its number, in order (none: left out)."""
        found: dict[str, list[tuple[int, str]]] = {}
        wanted = list(after.items())
        for start in range(0, len(wanted), MANY):
            for row in self._rows_after(wanted[start : start + MANY]):
                found.setdefault(row["session_id"], []).append((row["seq"], row["body"]))
        return found

    def _rows_after(self, wanted: Sequence[tuple[str, int]]) -> list[Any]:
        """The rows of ``after_many`` for some of its sessions, by session and number."""
        return self._read(
            "SELECT session_id, seq, body FROM session_frames WHERE "
            + " OR ".join(["(session_id = ? AND seq > ?)"] * len(wanted))
            + " ORDER BY session_id, seq",
            [value for pair in wanted for value in pair],
        )

    def last(self, session_id: str) -> int:
        """The highest number stored for the session (0 when none)."""
        rows = self._read(
            "SELECT MAX(seq) AS seq FROM session_frames WHERE session_id = ?", (session_id,)
        )
        return int(rows[0]["seq"] or 0)


def gone(frames: Sequence[tuple[str, int, str]]) -> SessionNotFound:
    """The error for a batch of frames one of whose sessions is no longer stored."""
    sessions = sorted({session_id for session_id, _, _ in frames})
    return SessionNotFound(", ".join(sessions), hint="a session of these frames was deleted")


def batch_json(frames: Iterable[tuple[str, int, str]]) -> str:
    """Frames as one JSON array of ``[session_id, seq, text]``, the whole batch one parameter
    (no work per frame for the driver). A text's NUL, which the databases' text cannot hold
    (SQLite cut the text there), becomes U+FFFD; its lone surrogates are left for the store
    to replace in the whole text at once (``storable``)."""
    rows = list(frames)
    text = json.dumps(rows, ensure_ascii=False)
    if "\\u0000" in text:  # a NUL, or a text's own "\\u0000" (cleaning that is harmless)
        cleaned = [[sid, seq, body.replace("\x00", "\ufffd")] for sid, seq, body in rows]
        text = json.dumps(cleaned, ensure_ascii=False)
    return text
