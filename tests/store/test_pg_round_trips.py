"""The PostgreSQL store's writes are pipelined (``store.pg_pipeline``): each costs a round trip
per result it reads plus its commit, counted here in libpq's own trace of the messages sent
(F) and received (B); and a statement the server refuses inside the pipeline still fails its
own write alone, and leaves the connection clean."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from psycopg import pq

from openheim.errors import SessionNotFound
from openheim.messages import Message
from openheim.store.postgres import PostgresStore

WAIT = 10.0


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresStore]:
    """A store with one connection, so that every statement goes through the traced one."""
    with PostgresStore(pg_url, pool_size=1) as opened:
        yield opened


def round_trips(store: PostgresStore, action: Callable[[], object], trace: Path) -> int:
    """How many times ``action`` sent the server something and then waited for its answer."""
    fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with store._pool.connection() as conn:
            conn.pgconn.trace(fd)
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            action()
        finally:
            with store._pool.connection() as conn:
                conn.pgconn.untrace()
    finally:
        os.close(fd)
    directions = [line[:1] for line in trace.read_text().splitlines() if line[:1] in ("F", "B")]
    return sum(1 for sent, got in itertools.pairwise(directions) if (sent, got) == ("F", "B"))


@pytest.mark.parametrize(
    ("write", "most"),
    [
        ("append", 2),  # its two reads asked together; its writes sent with the commit
        ("acquire", 2),
        ("release", 1),
        ("frames", 1),  # inserts and commit in one go, however many frames
        ("update", 2),
    ],
)
def test_a_write_costs_a_round_trip_per_read_and_one_for_its_commit(
    pg_store: PostgresStore, tmp_path: Path, write: str, most: int
) -> None:
    sid = pg_store.create(cwd="/w", provider="p", model="m").id
    lease = pg_store.acquire(sid) if write == "release" else None
    actions: dict[str, Callable[[], object]] = {
        "append": lambda: pg_store.append(sid, Message.user("hello")),
        "acquire": lambda: pg_store.acquire(sid),
        "release": lambda: lease.release() if lease is not None else None,
        "frames": lambda: pg_store.frames.append([(sid, n, f"frame {n}") for n in range(1, 41)]),
        "update": lambda: pg_store.update(sid, title="renamed"),
    }
    assert round_trips(pg_store, actions[write], tmp_path / "trace") <= most
    assert pg_store.get(sid).message_count == (1 if write == "append" else 0)


def test_writes_committed_together_cost_two_round_trips_each_and_one_commit(
    pg_store: PostgresStore, tmp_path: Path
) -> None:
    sids = [pg_store.create(cwd="/w", provider="p", model="m").id for _ in range(3)]

    def batch() -> None:
        """What the writing thread does with writes queued together (``store.batches``)."""
        with pg_store._tx():
            for sid in sids:
                pg_store.append(sid, Message.user("m"))

    assert round_trips(pg_store, batch, tmp_path / "trace") <= 2 * 3 + 1
    assert [pg_store.get(s).message_count for s in sids] == [1, 1, 1]


async def test_a_write_the_server_refuses_inside_a_batch_fails_alone(
    pg_store: PostgresStore,
) -> None:
    kept = pg_store.create(cwd="/w", provider="p", model="m").id
    gone = pg_store.create(cwd="/w", provider="p", model="m").id
    pg_store.delete(gone)
    entered, held = threading.Event(), threading.Event()
    blocker = pg_store.later(lambda: entered.set() or held.wait(WAIT))  # type: ignore[func-returns-value]
    assert await asyncio.to_thread(entered.wait, WAIT)  # the three below make one batch
    first = pg_store.later(lambda: pg_store.append(kept, Message.user("kept")))
    refused = pg_store.later(lambda: pg_store.frames.append([(gone, 1, "lost")]))
    last = pg_store.later(lambda: pg_store.frames.append([(kept, 1, "kept too")]))
    held.set()
    await asyncio.wait_for(asyncio.gather(blocker, first, last), WAIT)
    with pytest.raises(SessionNotFound):
        await refused
    assert [m.text for m in pg_store.messages(kept)] == ["kept"]
    assert list(pg_store.frames.after(kept, 0)) == [(1, "kept too")]


def test_a_commit_the_server_refuses_leaves_the_connection_clean(pg_store: PostgresStore) -> None:
    sid = pg_store.create(cwd="/w", provider="p", model="m").id
    gone = pg_store.create(cwd="/w", provider="p", model="m").id
    pg_store.delete(gone)
    with pytest.raises(SessionNotFound):
        pg_store.frames.append([(sid, 1, "with"), (gone, 1, "a deleted session")])
    with pg_store._pool.connection() as conn:
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    pg_store.append(sid, Message.user("still writable"))
    assert [m.text for m in pg_store.messages(sid)] == ["still writable"]
    assert list(pg_store.frames.after(sid, 0)) == []
