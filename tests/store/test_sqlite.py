"""The SQLite store's API: sessions, ids and prefixes, listing, appends, updates, deletes."""

from __future__ import annotations

import dataclasses
import sqlite3
import stat
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from openheim.messages import ImageBlock, Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from openheim.store import SessionNotFound, SessionStore, StoreError, open_store, tables
from openheim.store.common import SqlStore
from openheim.store.schema import MIGRATIONS, SchemaError
from openheim.store.sqlite import DB_NAME, SQLiteStore

from .support import call, raw, result


def new(
    store: SqlStore, cwd: str = "/work/a", *, title: str = "", skills: tuple[str, ...] = ()
) -> str:
    return store.create(cwd=cwd, provider="openai", model="gpt-4.1", title=title, skills=skills).id


def test_create_gives_a_uuid4_and_get_returns_it(store: SqlStore) -> None:
    record = store.create(cwd="/p", provider="anthropic", model="claude", skills=["rust", "py"])
    assert uuid.UUID(record.id).version == 4 and len(record.id) == 36
    assert record.created_at == record.updated_at
    assert (record.title, record.message_count, record.cost, record.parent_id) == (
        "",
        0,
        None,
        None,
    )
    assert store.get(record.id) == record


def test_get_by_unique_prefix_and_refusals(store: SqlStore) -> None:
    record = store.create(cwd="/p", provider="p", model="m")
    assert store.get(record.id[:6]) == record
    assert store.get(record.id[:6].upper()) == record
    with pytest.raises(SessionNotFound, match="at least 6"):
        store.get(record.id[:5])
    with pytest.raises(SessionNotFound):
        store.get("ffffffff")


def test_ambiguous_prefix_is_refused_but_a_full_id_is_not(store: SqlStore) -> None:
    base = store.create(cwd="/p", provider="p", model="m")
    twin_id = "abcdef12-0000-4000-8000-000000000001"
    other_id = "abcdef12-0000-4000-8000-000000000002"
    for sid in (twin_id, other_id):
        store.restore(dataclasses.replace(base, id=sid), [])
    with pytest.raises(SessionNotFound, match="several"):
        store.get("abcdef12")
    assert store.get(twin_id).id == twin_id


def test_list_is_newest_updated_first_with_cwd_filter_and_cursor(store: SqlStore) -> None:
    ids = [new(store, cwd="/a" if i % 2 else "/b") for i in range(7)]
    store.append(ids[0], Message.user("bump the oldest"))
    order = [ids[0], *reversed(ids[1:])]
    assert [r.id for r in store.list()] == order
    assert [r.id for r in store.list(cwd="/a")] == [i for i in order if i in ids[1::2]]
    page1 = store.list(limit=3)
    page2 = store.list(limit=3, before=page1[-1].updated_at)
    page3 = store.list(limit=3, before=page2[-1].updated_at)
    assert [r.id for r in page1 + page2 + page3] == order
    assert store.list(limit=3, before=page3[-1].updated_at) == []


def test_updated_at_is_unique_so_the_cursor_never_skips(store: SqlStore) -> None:
    ids = [new(store) for _ in range(50)]
    stamps = [store.get(i).updated_at for i in ids]
    assert len(set(stamps)) == 50 and stamps == sorted(stamps)


def test_latest_is_per_cwd(store: SqlStore) -> None:
    assert store.latest("/a") is None
    first, second, other = new(store, "/a"), new(store, "/a"), new(store, "/b")
    store.append(first, Message.user("again"))
    assert [r.id if r else None for r in (store.latest("/a"), store.latest("/b"))] == [first, other]
    store.append(second, Message.user("now me"))
    assert [r.id if r else None for r in (store.latest("/a"),)] == [second]


def test_append_keeps_order_and_counts(store: SqlStore) -> None:
    sid = new(store)
    sent = [
        Message.user("one"),
        Message("assistant", (ThinkingBlock("hmm", signature="sig"), TextBlock("two"))),
        call("c1", path="a.txt"),
        result("c1", "contents"),
        Message("assistant", (ToolUseBlock("c2", "run", {}, raw_arguments="{not json"),)),
        result("c2", "bad arguments", is_error=True),
        Message.user("look", ImageBlock("aGVsbG8=", "image/png")),
    ]
    before = store.get(sid).updated_at
    for message in sent:
        store.append(sid, message)
    assert store.messages(sid) == sent
    record = store.get(sid)
    assert record.message_count == len(sent)
    assert record.updated_at > before


def disk_failure(store: SqlStore) -> Exception:
    """The backend's own failure of its storage, which the store reports as a ``StoreError``."""
    if isinstance(store, SQLiteStore):
        return sqlite3.OperationalError("disk I/O error")
    import psycopg

    return psycopg.OperationalError("could not write to file: No space left on device")


@pytest.mark.parametrize(
    ("failure", "raised"),
    [
        ("disk", StoreError),
        (RuntimeError("a bug"), RuntimeError),
    ],
    ids=["disk", "bug"],
)
def test_an_append_that_fails_after_inserting_is_rolled_back(
    store: SqlStore,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception | str,
    raised: type[Exception],
) -> None:
    error = disk_failure(store) if isinstance(failure, str) else failure
    sid = new(store)
    store.append(sid, Message.user("one"))

    def broken(text: str) -> str:  # runs after the message row is inserted
        raise error

    monkeypatch.setattr(tables, "storable", broken)
    with pytest.raises(raised):
        store.append(sid, Message.user("zebrafish"))
    monkeypatch.undo()
    assert [m.text for m in store.messages(sid)] == ["one"]
    assert store.get(sid).message_count == 1
    assert store.search("zebrafish") == []
    store.append(sid, Message.user("three"))  # the numbering goes on where it was
    assert [m.text for m in store.messages(sid)] == ["one", "three"]


def test_title_comes_from_the_first_prompt_once(store: SqlStore) -> None:
    sid = new(store)
    store.append(sid, result("c0"))  # no text: no title yet
    assert store.get(sid).title == ""
    store.append(sid, Message.user("  fix\nthe   build  "))
    store.append(sid, Message.user("something else"))
    assert store.get(sid).title == "fix the build"


def test_long_titles_are_cut_to_80_characters(store: SqlStore) -> None:
    sid = new(store)
    store.append(sid, Message.user("word " * 40))
    title = store.get(sid).title
    assert len(title) <= 80 and title.endswith("…") and title.startswith("word word")


def test_a_given_title_is_kept(store: SqlStore) -> None:
    sid = new(store, title="Named")
    store.append(sid, Message.user("hello"))
    assert store.get(sid).title == "Named"


def test_update_changes_only_what_is_given(store: SqlStore) -> None:
    sid = new(store, skills=("a",))
    store.update(sid, title="T", model="m2", usage=Usage(10, 20, 3, 4), cost=0.5)
    record = store.get(sid)
    assert (record.title, record.model, record.provider, record.skills) == (
        "T",
        "m2",
        "openai",
        ["a"],
    )
    assert (record.usage, record.cost) == (Usage(10, 20, 3, 4), 0.5)
    store.update(sid, provider="anthropic", skills=["b", "c"])
    record = store.get(sid)
    assert (record.title, record.provider, record.skills) == ("T", "anthropic", ["b", "c"])
    store.update(sid)  # nothing to change is fine
    with pytest.raises(SessionNotFound):
        store.update(str(uuid.uuid4()), title="x")


def test_delete_removes_messages_search_rows_and_orphans_forks(store: SqlStore) -> None:
    parent = new(store)
    store.append(parent, Message.user("unique zebra words"))
    child = store.create(cwd="/a", provider="p", model="m", parent_id=parent)
    assert child.parent_id == parent
    store.delete(parent)
    with pytest.raises(SessionNotFound):
        store.get(parent)
    with pytest.raises(SessionNotFound):
        store.messages(parent)
    assert store.search("zebra") == []
    assert store.get(child.id).parent_id is None
    with pytest.raises(SessionNotFound):
        store.delete(parent)


def test_missing_sessions_raise_not_found(store: SqlStore) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(SessionNotFound):
        store.append(missing, Message.user("x"))
    with pytest.raises(SessionNotFound):
        store.acquire(missing)
    with pytest.raises(SessionNotFound):
        store.create(cwd="/", provider="p", model="m", parent_id=missing)
    assert store.messages(new(store)) == []


def test_the_database_is_private_and_in_wal_mode(tmp_path: Path) -> None:
    with open_store(tmp_path / "data") as store:
        new(store)
    db = tmp_path / "data" / "openheim.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    with raw(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]


def test_reopening_keeps_everything_and_skips_migrations(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        sid = new(store)
        store.append(sid, Message.user("kept"))
    with open_store(tmp_path) as store:
        assert store.messages(sid) == [Message.user("kept")]


def test_a_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    with raw(tmp_path / "openheim.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(SchemaError, match="upgrade openheim"):
        open_store(tmp_path)


def test_store_is_usable_from_threads(store: SqlStore) -> None:
    sid = new(store)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: store.append(sid, Message.user(f"m{i}")), range(200)))
    texts = {m.text for m in store.messages(sid)}
    assert texts == {f"m{i}" for i in range(200)}
    assert store.get(sid).message_count == 200


def test_sqlite_store_satisfies_the_protocol(store: SqlStore) -> None:
    typed: SessionStore = store  # mypy checks the structure; this checks it is the same object
    assert typed is store


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "openheim.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="failed"):
        open_store(tmp_path)


def test_a_write_lock_held_too_long_is_a_store_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "db", busy_timeout=0.05) as store, raw(store.path) as other:
        sid = new(store)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked"):
            store.append(sid, Message.user("blocked"))
        other.execute("ROLLBACK")
        store.append(sid, Message.user("free again"))
        assert store.get(sid).message_count == 1


def test_close_is_idempotent(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    sid = store.create(cwd="/w", provider="p", model="m").id
    wal = tmp_path / (DB_NAME + "-wal")
    assert wal.exists()  # open, in WAL mode
    store.close()
    assert not wal.exists()  # the connection really closed: SQLite checkpointed and removed it
    store.close()  # a second close does nothing, and raises nothing
    with open_store(tmp_path) as again:
        assert again.get(sid).model == "m"


def test_importing_the_store_package_does_not_load_sqlite() -> None:
    code = "import sys, openheim.store; print('sqlite3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
