"""The store's writing thread (``SQLiteStore.later``, ``store.batches``): writes queued together
commit together, each in a savepoint, settled in order once committed."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.errors import SessionNotFound, StoreError
from openheim.messages import Message
from openheim.store.batches import BatchWriter
from openheim.store.common import SqlStore
from openheim.store.sqlite import SQLiteStore, open_store

WAIT = 10.0


async def test_writes_queued_together_commit_in_one_transaction(sqlite_store: SQLiteStore) -> None:
    records = [sqlite_store.create(cwd="/w", provider="p", model="m") for _ in range(5)]
    statements: list[str] = []
    sqlite_store._conn.set_trace_callback(statements.append)
    entered, held = threading.Event(), threading.Event()
    blocker = sqlite_store.later(lambda: entered.set() or held.wait(WAIT))  # type: ignore[func-returns-value]
    assert await asyncio.to_thread(entered.wait, WAIT)  # the thread is busy: the rest queue
    writes = [
        sqlite_store.later(lambda r=r, n=n: sqlite_store.append(r.id, Message.user(f"m{n}")))  # type: ignore[misc]
        for n, r in enumerate(records)
    ]
    held.set()
    assert await asyncio.wait_for(blocker, WAIT) is True
    await asyncio.wait_for(asyncio.gather(*writes), WAIT)
    sqlite_store._conn.set_trace_callback(None)
    assert statements.count("COMMIT") == 2  # the blocker's batch, then all five appends
    assert statements.count("SAVEPOINT write") >= 5
    assert [sqlite_store.messages(r.id)[0].text for r in records] == [f"m{n}" for n in range(5)]


async def test_a_failing_write_fails_alone(store: SqlStore) -> None:
    record = store.create(cwd="/w", provider="p", model="m")
    entered, held = threading.Event(), threading.Event()
    blocker = store.later(lambda: entered.set() or held.wait(WAIT))  # type: ignore[func-returns-value]
    assert await asyncio.to_thread(entered.wait, WAIT)  # the three below make one batch
    first = store.later(lambda: store.append(record.id, Message.user("kept")))
    failing = store.later(lambda: store.append("no-such-session", Message.user("lost")))
    last = store.later(lambda: store.append(record.id, Message.user("kept too")))
    held.set()
    await asyncio.wait_for(asyncio.gather(blocker, first, last), WAIT)
    with pytest.raises(SessionNotFound):
        await failing
    assert [m.text for m in store.messages(record.id)] == ["kept", "kept too"]


async def test_a_failed_commit_fails_every_write_of_its_batch() -> None:
    @contextlib.contextmanager
    def broken() -> Iterator[None]:
        yield
        raise StoreError("the disk is full", hint="free some space")

    writer = BatchWriter(broken)
    done: list[int] = []
    futures = [writer.submit(lambda n=n: done.append(n)) for n in range(3)]  # type: ignore[misc]
    results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), WAIT)
    writer.close()
    assert all(isinstance(r, StoreError) for r in results)


async def test_closing_the_store_writes_what_is_queued(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    record = store.create(cwd="/w", provider="p", model="m")
    future = store.later(lambda: store.append(record.id, Message.user("last words")))
    store.close()
    with sqlite3.connect(tmp_path / "openheim.db") as conn:
        rows = conn.execute("SELECT count(*) FROM messages").fetchone()
    assert rows == (1,)
    await asyncio.wait_for(future, WAIT)
