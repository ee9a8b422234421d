"""SQL on the store's tables, run inside the caller's transaction.

Session rows map to ``SessionRecord``; each message is one JSON row (``Message.to_dict``) with
its text, if any, in ``messages_fts`` under the same rowid, written and deleted together.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace as replaced
from typing import Any, Protocol

from openheim.messages import Message, TextBlock, Usage
from openheim.store.base import SessionRecord


class Cursor(Protocol):
    """What the store reads of a cursor: ``sqlite3.Cursor`` and the PostgreSQL one alike."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """A connection of either backend, with ``?`` placeholders; rows read by index or name."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor: ...


_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_HEAD = ("id", "title", "cwd", "provider", "model", "skills", "created_at", "updated_at")
COLUMNS = ", ".join((*_HEAD, *_USAGE, "cost", "parent_id", "message_count"))
UPSERT = (
    f"INSERT INTO sessions ({COLUMNS}) VALUES ({', '.join('?' * 15)}) ON CONFLICT(id) DO UPDATE "
    "SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS.split(", ")[1:])
)

_SURROGATE = re.compile("[\ud800-\udfff]")


class TableSet:
    """Some tables of one store, written in its transactions (``tx``) and read through its
    ``read``: the frame log, the compaction log and the checkpoints share these two."""

    def __init__(
        self,
        tx: Callable[[], AbstractContextManager[Connection]],
        read: Callable[[str, Sequence[Any]], list[Any]],
    ) -> None:
        self._tx = tx
        self._read = read


def storable(text: str) -> str:
    """``text`` with each lone surrogate (valid in JSON from a model, not encodable as UTF-8,
    so SQLite refuses it) replaced by U+FFFD: for columns that are plain text. An ASCII text
    (known without a scan) is returned as it is."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def body_json(message: Message) -> str:
    """The message as its row's JSON; lossless: where its text holds a lone surrogate, the JSON
    keeps it as a ``\\uXXXX`` escape (all non-ASCII escaped), which reads back the same."""
    data = message.to_dict()
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(data, separators=(",", ":")) if _SURROGATE.search(body) else body


def stamp(conn: Connection) -> float:
    """Now, or just after the newest ``updated_at`` in the store: unique, so a cursor is exact."""
    newest = conn.execute("SELECT MAX(updated_at) FROM sessions").fetchone()[0]
    now = time.time()
    return now if newest is None or now > newest else math.nextafter(newest, math.inf)


def exists(conn: Connection, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def filters(*, cwd: str | None, before: float | None) -> tuple[str, list[Any]]:
    """The WHERE clause of a session listing, and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if cwd is not None:
        clauses.append("cwd = ?")
        params.append(cwd)
    if before is not None:
        clauses.append("updated_at < ?")
        params.append(before)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


def load_messages(conn: Connection, session_id: str) -> list[Message]:
    rows = conn.execute(
        "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
    ).fetchall()
    return [Message.from_dict(json.loads(row[0])) for row in rows]


def insert_messages(
    conn: Connection, session_id: str, seq: int, messages: Iterable[Message], now: float
) -> None:
    """Store ``messages`` numbered from ``seq``, each with its text indexed for search."""
    for offset, message in enumerate(messages):
        body = body_json(message)
        conn.execute(
            "INSERT INTO messages (session_id, seq, role, body, created_at) VALUES (?, ?, ?, ?, ?)",
            (session_id, seq + offset, message.role, body, now),
        )
        text = search_text(message)
        if text.strip():
            conn.execute(
                "INSERT INTO messages_fts (rowid, text) VALUES (last_insert_rowid(), ?)", (text,)
            )


def search_text(message: Message) -> str:
    """What full-text search indexes of a message: its text blocks, one per line."""
    return storable("\n".join(b.text for b in message.content if isinstance(b, TextBlock)))


def delete_messages(conn: Connection, session_id: str, *, from_seq: int) -> None:
    """Delete the session's messages numbered ``from_seq`` and up, with their search rows."""
    where = "session_id = ? AND seq >= ?"
    params = (session_id, from_seq)
    conn.execute(
        f"DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE {where})", params
    )
    conn.execute(f"DELETE FROM messages WHERE {where}", params)


def restored(conn: Connection, record: SessionRecord, count: int) -> SessionRecord:
    """``record`` as a restore stores it: ``count`` messages, a unique ``updated_at``, and no
    ``parent_id`` when that session is missing here (or is the session itself)."""
    parent = record.parent_id
    if parent is not None and (parent == record.id or not exists(conn, parent)):
        parent = None
    return replaced(
        record,
        skills=list(record.skills),
        updated_at=_free_stamp(conn, record.id, record.updated_at),
        parent_id=parent,
        message_count=count,
    )


def _free_stamp(conn: Connection, session_id: str, value: float) -> float:
    """``value``, nudged up until no other session has it (keeps ``updated_at`` unique)."""
    query = "SELECT 1 FROM sessions WHERE updated_at = ? AND id != ?"
    while conn.execute(query, (value, session_id)).fetchone() is not None:
        value = math.nextafter(value, math.inf)
    return value


def values(record: SessionRecord) -> tuple[Any, ...]:
    """The record as ``UPSERT`` parameters, in ``COLUMNS`` order."""
    head = (record.id, storable(record.title), storable(record.cwd), record.provider, record.model)
    times = (json.dumps(list(record.skills)), record.created_at, record.updated_at)
    tail = (record.cost, record.parent_id, record.message_count)
    usage = record.usage.to_dict()
    return (*head, *times, *(usage[k] for k in _USAGE), *tail)


def record(row: Mapping[str, Any]) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        title=row["title"],
        cwd=row["cwd"],
        provider=row["provider"],
        model=row["model"],
        skills=json.loads(row["skills"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        usage=Usage(*(row[k] for k in _USAGE)),
        cost=row["cost"],
        parent_id=row["parent_id"],
        message_count=row["message_count"],
    )


def fts_query(text: str) -> str:
    """User text as an FTS5 query that matches every word literally.

    Each whitespace-separated word becomes a quoted phrase (quotes doubled), so FTS syntax in
    the input (``"``, ``*``, ``-``, ``NEAR``, ``AND``, ``:``) is just text. A NUL separates
    words (SQLite would end the query there) and a lone surrogate becomes ``?``.
    """
    text = text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
    return " ".join('"' + word.replace('"', '""') + '"' for word in text.split())


def legacy_wanted(conn: Connection, session_id: str, imported_at: float | None) -> bool:
    """New here and never imported before, or untouched here since its last import."""
    row = conn.execute("SELECT updated_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return imported_at is None
    return imported_at is not None and row["updated_at"] == imported_at
