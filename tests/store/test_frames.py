"""The frame log: numbered frames per session, read back after a number, trimmed to the last
``keep``, gone with their session."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openheim.errors import SessionNotFound
from openheim.store import frames
from openheim.store.common import SqlStore
from openheim.store.schema import _V1, MIGRATIONS
from openheim.store.sqlite import SQLiteStore


def new_session(store: SqlStore) -> str:
    return store.create(cwd="/", provider="p", model="m").id


def test_frames_are_read_back_after_a_number(store: SqlStore) -> None:
    sid, other = new_session(store), new_session(store)
    store.frames.append([(sid, 1, "a"), (sid, 2, "b")])
    store.frames.append([(sid, 3, "c"), (other, 1, "x")])
    assert list(store.frames.after(sid, 0)) == [(1, "a"), (2, "b"), (3, "c")]
    assert list(store.frames.after(sid, 2)) == [(3, "c")]
    assert list(store.frames.after(sid, 3)) == []
    assert (store.frames.last(sid), store.frames.last(other)) == (3, 1)
    assert store.frames.last(new_session(store)) == 0


def test_frames_of_many_sessions_are_read_at_once(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "MANY", 2)  # three sessions: two queries
    one, two, three, quiet = (new_session(store) for _ in range(4))
    store.frames.append([(one, 1, "a"), (one, 2, "b"), (two, 1, "x"), (three, 5, "z")])
    store.frames.append([(one, 3, "c"), (two, 2, "y")])
    found = store.frames.after_many({one: 1, two: 2, three: 0, quiet: 0})
    assert found == {one: [(2, "b"), (3, "c")], three: [(5, "z")]}
    assert store.frames.after_many({}) == {}


def test_a_number_twice_in_one_batch_keeps_its_last_text(store: SqlStore) -> None:
    sid = new_session(store)
    store.frames.append([(sid, 1, "first"), (sid, 2, "b"), (sid, 1, "again")])
    assert list(store.frames.after(sid, 0)) == [(1, "again"), (2, "b")]


def test_only_the_last_frames_are_kept(store: SqlStore) -> None:
    sid = new_session(store)
    store.frames.keep = 3
    store.frames.append([(sid, n, str(n)) for n in range(1, 6)])
    assert [seq for seq, _ in store.frames.after(sid, 0)] == [3, 4, 5]


def test_frames_go_with_their_session(store: SqlStore) -> None:
    sid = new_session(store)
    store.frames.append([(sid, 1, "a")])
    store.delete(sid)
    assert list(store.frames.after(sid, 0)) == []


def test_frames_written_inside_a_transaction_commit_or_fail_with_it(store: SqlStore) -> None:
    """As ``sessions migrate`` writes a session and its frames: the frames see the session the
    transaction created, and go with it when the transaction fails."""
    with store.transaction():
        sid = new_session(store)
        store.frames.append([(sid, 1, "with its session")])
    assert list(store.frames.after(sid, 0)) == [(1, "with its session")]
    with pytest.raises(RuntimeError), store.transaction():
        undone = new_session(store)
        store.frames.append([(undone, 1, "undone")])
        raise RuntimeError("the transaction fails")
    assert list(store.frames.after(undone, 0)) == []
    assert undone not in [record.id for record in store.list()]


def test_a_version_1_database_gains_the_frame_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for statement in _V1:
        conn.execute(statement)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    try:
        sid = new_session(store)
        store.frames.append([(sid, 1, "a")])
        assert store.frames.last(sid) == 1
    finally:
        store.close()
    assert len(MIGRATIONS) == 3


def test_a_batch_with_a_deleted_session_is_refused_whole(store: SqlStore) -> None:
    """A session deleted while its frames were queued: the batch fails with ``SessionNotFound``
    (the server's writer then stores the other sessions' frames alone), nothing of it stored."""
    kept, deleted = new_session(store), new_session(store)
    store.delete(deleted)
    with pytest.raises(SessionNotFound) as caught:
        store.frames.append([(kept, 1, "a"), (deleted, 1, "b")])
    assert deleted in str(caught.value)
    assert list(store.frames.after(kept, 0)) == []
    store.frames.append([(kept, 1, "a")])
    assert list(store.frames.after(kept, 0)) == [(1, "a")]


KEPT = [
    '{"text": "a \\"quoted\\" \\\\u0000 word"}',
    "back\\slash \\u0000 \\\\",
    "naïve ☃ 😀",
    "[1, 2]",
]
"""Texts a frame keeps exactly: JSON escapes (of a NUL too), backslashes, non-ASCII."""


@pytest.mark.parametrize("text", KEPT)
def test_a_frame_keeps_its_text_exactly(store: SqlStore, text: str) -> None:
    sid = new_session(store)
    store.frames.append([(sid, 1, text), (sid, 2, "next")])
    assert list(store.frames.after(sid, 0)) == [(1, text), (2, "next")]


@pytest.mark.parametrize("text", ["a\x00b", "half \ud800 pair", "\x00 and \ud800"])
def test_a_nul_or_a_lone_surrogate_is_stored_as_a_replacement_character(
    store: SqlStore, text: str
) -> None:
    sid = new_session(store)
    store.frames.append([(sid, 1, text), (sid, 2, "next")])
    (seq, stored), after = store.frames.after(sid, 0)
    assert (seq, after) == (1, (2, "next"))
    assert stored in (text, text.replace("\x00", "\ufffd").replace("\ud800", "\ufffd"))
