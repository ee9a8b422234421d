"""Crash safety: a writer SIGKILLed in the middle of an append loses only that append."""

from __future__ import annotations

from openheim.messages import Message
from openheim.store.sqlite import SQLiteStore

from .support import Child, raw

APPENDS = 25
BIG = 8_000_000
"""The pinned append's size: past SQLite's page cache, so its pages reach the WAL uncommitted."""


def writer_code(session_id: str) -> str:
    """Append APPENDS messages, then start one more and stop dead just before its COMMIT."""
    return f"""
        from openheim.messages import Message, ToolResultBlock
        from openheim.store.sqlite import SQLiteStore
        store = SQLiteStore(db)
        for i in range({APPENDS}):
            store.append({session_id!r}, Message.user(f"message {{i}}"))

        def pin(statement):
            if statement.startswith("COMMIT"):
                signal("pinned")
                sys.stdin.read()  # the parent kills us here, mid-transaction

        store._conn.set_trace_callback(pin)
        big = Message("user", (ToolResultBlock("c", "x" * {BIG}),))
        store.append({session_id!r}, big)
        signal("committed")
    """


def test_sigkill_mid_append_keeps_exactly_the_committed_messages(sqlite_store: SQLiteStore) -> None:
    sid = sqlite_store.create(cwd="/", provider="p", model="m").id
    child = Child(sqlite_store.path, writer_code(sid))
    child.expect("pinned")
    child.kill()

    wal = sqlite_store.path.with_name(sqlite_store.path.name + "-wal")
    assert wal.stat().st_size > BIG // 2, "the uncommitted append should have spilled into the WAL"
    with raw(sqlite_store.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (APPENDS,)

    assert sqlite_store.messages(sid) == [Message.user(f"message {i}") for i in range(APPENDS)]
    assert sqlite_store.get(sid).message_count == APPENDS
    sqlite_store.append(sid, Message.user("the sqlite_store works on"))
    assert sqlite_store.get(sid).message_count == APPENDS + 1
    assert [h.session_id for h in sqlite_store.search("message")] == [sid]
