"""Prompt leases: one holder per session across processes, stale holders taken over."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from openheim.store import SessionBusy, SessionNotFound
from openheim.store.common import SqlStore
from openheim.store.lease import process_started, this_host
from openheim.store.sqlite import SQLiteStore

from .support import Child, call, raw


def holder_code(session_id: str) -> str:
    return f"""
        from openheim.store.sqlite import SQLiteStore
        store = SQLiteStore(db)
        lease = store.acquire({session_id!r})
        signal("held")
        sys.stdin.read()
        lease.release()
        store.close()
    """


def new(store: SqlStore) -> str:
    return store.create(cwd="/", provider="p", model="m").id


def put_lease(store: SqlStore, session_id: str, **row: object) -> None:
    """Write a lease row as some other holder would have."""
    values = {"token": "t", "pid": os.getpid(), "host": this_host(), "started": None}
    values |= {"acquired_at": time.time(), "heartbeat_at": time.time(), **row}
    columns = ", ".join(values)
    updates = ", ".join(f"{name} = excluded.{name}" for name in values)
    with store._tx() as conn:
        conn.execute(
            f"INSERT INTO leases (session_id, {columns}) VALUES (?, ?, ?, ?, ?, ?, ?)"
            f" ON CONFLICT (session_id) DO UPDATE SET {updates}",
            (session_id, *values.values()),
        )


def test_a_live_holder_in_another_process_makes_the_session_busy(sqlite_store: SQLiteStore) -> None:
    sid = new(sqlite_store)
    child = Child(sqlite_store.path, holder_code(sid))
    try:
        child.expect("held")
        with pytest.raises(SessionBusy) as caught:
            sqlite_store.acquire(sid)
        assert (caught.value.pid, caught.value.host) == (child.pid, this_host())
        assert f"process {child.pid} on {this_host()}" in str(caught.value)
    finally:
        assert child.finish() == 0
    with sqlite_store.acquire(sid) as lease:
        assert lease.session_id == sid


def test_the_lease_of_a_killed_process_is_taken_over(
    sqlite_store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    sid = new(sqlite_store)
    child = Child(sqlite_store.path, holder_code(sid))
    child.expect("held")
    child.kill()
    with caplog.at_level(logging.WARNING), sqlite_store.acquire(sid):
        pass
    assert f"from process {child.pid}" in caplog.text


def test_a_second_acquire_in_the_same_process_is_busy_until_release(store: SqlStore) -> None:
    sid = new(store)
    lease = store.acquire(sid)
    with pytest.raises(SessionBusy) as caught:
        store.acquire(sid)
    assert caught.value.pid == os.getpid()
    lease.release()
    lease.release()  # twice is harmless
    store.acquire(sid).release()


def test_the_context_manager_releases_on_error(store: SqlStore) -> None:
    sid = new(store)
    with pytest.raises(RuntimeError), store.acquire(sid):
        raise RuntimeError("prompt failed")
    store.acquire(sid).release()


def test_another_host_is_trusted_until_its_heartbeat_times_out(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "db", lease_timeout=60) as store:
        sid = new(store)
        put_lease(store, sid, host="elsewhere", pid=1, heartbeat_at=time.time() - 30)
        with pytest.raises(SessionBusy) as caught:
            store.acquire(sid)
        assert (caught.value.pid, caught.value.host) == (1, "elsewhere")
        put_lease(store, sid, host="elsewhere", pid=1, heartbeat_at=time.time() - 61)
        store.acquire(sid).release()


@pytest.mark.skipif(process_started(os.getpid()) is None, reason="needs /proc")
def test_a_reused_pid_does_not_keep_a_lease(sqlite_store: SQLiteStore) -> None:
    sid = new(sqlite_store)
    put_lease(sqlite_store, sid, started="another-boot:12345")  # our pid, but not our process
    sqlite_store.acquire(sid).release()
    put_lease(sqlite_store, sid, started=process_started(os.getpid()))  # really us: still busy
    with pytest.raises(SessionBusy):
        sqlite_store.acquire(sid)


def test_refresh_moves_the_heartbeat_and_notices_a_takeover(sqlite_store: SQLiteStore) -> None:
    sid = new(sqlite_store)
    lease = sqlite_store.acquire(sid)
    put_lease(sqlite_store, sid, token="mine-no-more")  # someone else's now
    with pytest.raises(SessionBusy):
        lease.refresh()
    lease.release()  # must not delete the new holder's row
    with raw(sqlite_store.path) as conn:
        assert conn.execute("SELECT token FROM leases").fetchall() == [("mine-no-more",)]


def test_refresh_updates_the_heartbeat(sqlite_store: SQLiteStore) -> None:
    sid = new(sqlite_store)
    with sqlite_store.acquire(sid) as lease, raw(sqlite_store.path) as conn:
        conn.execute("UPDATE leases SET heartbeat_at = 0")
        lease.refresh()
        assert conn.execute("SELECT heartbeat_at FROM leases").fetchone()[0] > time.time() - 60
        sqlite_store.delete(sid)
        with pytest.raises(SessionNotFound):
            lease.refresh()


def test_delete_refuses_while_another_process_prompts(sqlite_store: SQLiteStore) -> None:
    sid = new(sqlite_store)
    child = Child(sqlite_store.path, holder_code(sid))
    try:
        child.expect("held")
        with pytest.raises(SessionBusy):
            sqlite_store.delete(sid)
    finally:
        child.finish()
    sqlite_store.delete(sid)


def test_no_repair_is_stored_while_another_process_may_run_the_tool(
    sqlite_store: SQLiteStore,
) -> None:
    sid = new(sqlite_store)
    sqlite_store.append(sid, call("c1"))
    child = Child(sqlite_store.path, holder_code(sid))
    try:
        child.expect("held")
        assert len(sqlite_store.messages(sid)) == 2  # shown repaired...
        assert sqlite_store.get(sid).message_count == 1  # ...but not written under a live prompt
    finally:
        child.finish()
    assert sqlite_store.messages(sid)[0] == call("c1")
    assert sqlite_store.get(sid).message_count == 2


@pytest.mark.parametrize(("silent_for", "taken_over"), [(11.0, True), (5.0, False)])
def test_a_postgresql_lease_of_another_machine_expires_within_ten_seconds(
    pg_url: str, silent_for: float, taken_over: bool
) -> None:
    from openheim.store.postgres import PostgresStore

    with PostgresStore(pg_url) as store:
        sid = new(store)
        put_lease(store, sid, host="elsewhere", pid=1, heartbeat_at=time.time() - silent_for)
        try:
            store.acquire(sid).release()
            got = True
        except SessionBusy:
            got = False
    assert got is taken_over


def test_a_prompt_refreshes_its_lease_well_within_the_timeout(pg_url: str) -> None:
    from openheim.runtime.store_writes import Heartbeat
    from openheim.store.postgres import PostgresStore

    with PostgresStore(pg_url) as store:
        lease = store.acquire(new(store))
        every = Heartbeat(lease, store).every
        lease.release()
    assert every <= lease.timeout / 3 and lease.timeout <= 10
