"""Session store: the store's cost of one prompt turn on PostgreSQL beside SQLite, in one run.

A turn writes what a prompt of a stored session served by ``openheim serve`` writes, through
the same calls: the lease taken (``store.acquire`` on the store's writing thread, as
``Session._lease`` does), the user's message, an assistant message with a tool call, its tool
result and the answer (``PersistentHistory`` handing each to the writing thread, the turn
waiting for each as the prompt's stream does), the streamed answer's frames (numbered JSON
frames in batches, as ``FrameWriter`` hands them to ``store.frames.append`` on its own thread),
then the usage totals and the lease given back in one write (``store_writes.settle``). No model
and no client: only the store's work is timed.

Each round runs ``--concurrent`` sessions taking turns at once (1: one turn after another) for
``--turns`` turns per backend, the two backends taking turns (A B B A ...) so that a machine
getting busier hits both alike. PostgreSQL is a private cluster started here, on a Unix socket
in a temporary folder (``tests/pgcluster.py``: ``fsync`` off, as SQLite's
``synchronous=NORMAL`` does not wait for the disk either). Printed per backend: p50
and p99 of a turn, turns per second, this process's CPU time per turn, and for PostgreSQL
the statements and the locked writes (write transactions that take the store's write lock;
the frame log's take none) the server ran per turn (``pg_stat_statements``);
then the ratios PostgreSQL / SQLite.

``--latency MS`` puts PostgreSQL that many milliseconds of round trip away (a relay process on
another Unix socket delays each chunk by half of it each way), as a database on another
machine is.

    .venv/bin/python bench/store_turn.py [--turns 300] [--concurrent 1] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import multiprocessing
import queue
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.pgcluster import Cluster

from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from openheim.runtime.history import PersistentHistory
from openheim.runtime.store_writes import off_loop, record, release, settle
from openheim.store.common import SqlStore
from openheim.store.postgres import PostgresStore
from openheim.store.sqlite import open_store
from openheim.usage import Meter

COUNTED = ("SELECT%", "INSERT%", "UPDATE%", "DELETE%")
"""The statements counted per turn."""
ROUNDS = 6
"""Rounds per backend; each round runs ``turns / ROUNDS`` turns."""

PROMPT = Message.user("please read src/parser.py and tell me what its handler returns")
CALL = Message(
    "assistant",
    (TextBlock("Reading it."), ToolUseBlock("call_1", "read_file", {"path": "src/parser.py"})),
)
RESULT = Message("user", (ToolResultBlock("call_1", "def handler(request):\n    return 1\n" * 30),))
ANSWER = Message("assistant", (TextBlock("The handler returns 1 for every request. " * 8),))


def frame(seq: int) -> str:
    """A streamed delta as the server's frame log holds it."""
    return (
        f'{{"channel":"session","seq":{seq},"data":{{"type":"text_delta",'
        f'"text":"the handler returns one for request {seq} "}}}}'
    )


@dataclass
class Backend:
    """One store under test, its sessions and its timings."""

    name: str
    store: SqlStore
    sessions: list[str]
    frames: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="bench-frames")
    )
    seq: dict[str, int] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0
    """This process's CPU seconds (every thread) over the timed turns."""
    counters: Callable[[], tuple[int, int]] | None = None
    """Statements and transactions the server ran so far (PostgreSQL only)."""


async def turn(backend: Backend, session_id: str, frames: int, per_write: int) -> float:
    """One turn's store writes, as the runtime and the server make them; its seconds."""
    store = backend.store
    start = time.perf_counter()
    lease = await off_loop(store, functools.partial(store.acquire, session_id), undo=release)
    history = PersistentHistory(store, session_id, [])
    await record(history, PROMPT)
    for message in (CALL, RESULT):
        history.append(message)
        await history.saved()
    loop = asyncio.get_running_loop()
    first = backend.seq.get(session_id, 0) + 1
    for low in range(first, first + frames, per_write):
        batch = [
            (session_id, s, frame(s)) for s in range(low, min(low + per_write, first + frames))
        ]
        await loop.run_in_executor(backend.frames, store.frames.append, batch)
    backend.seq[session_id] = first + frames - 1
    history.append(ANSWER)
    await history.saved()
    meter = Meter(usage=Usage(input_tokens=1200, output_tokens=300))
    await settle(store, session_id, history, meter, lease)
    return time.perf_counter() - start


async def run_round(backend: Backend, turns: int, frames: int, per_write: int) -> None:
    """``turns`` turns over the backend's sessions, ``len(sessions)`` at once."""
    left = iter(range(turns))

    async def worker(session_id: str) -> None:
        for _ in left:
            backend.times.append(await turn(backend, session_id, frames, per_write))

    start, cpu = time.perf_counter(), time.process_time()
    async with asyncio.TaskGroup() as group:
        for session_id in backend.sessions:
            group.create_task(worker(session_id))
    backend.wall += time.perf_counter() - start
    backend.cpu += time.process_time() - cpu


Chunks = queue.SimpleQueue[tuple[float, bytes]]
"""What a relay thread read, each with the moment it is to be sent on."""


class Delayed:
    """A Unix-socket relay to the cluster that delays every chunk by half ``latency`` seconds
    each way, as a network between the server and PostgreSQL would (a process of its own, so
    that it never waits for this one's interpreter lock)."""

    def __init__(self, upstream: str, latency: float) -> None:
        self.folder = tempfile.mkdtemp(prefix="openheim-relay-")
        listening = Path(self.folder) / ".s.PGSQL.5432"
        self._process = multiprocessing.get_context("fork").Process(
            target=_relay_main, args=(str(listening), upstream, latency / 2), daemon=True
        )
        self._process.start()
        deadline = time.monotonic() + 10
        while not listening.exists():  # bounded: the relay listens within moments
            if time.monotonic() > deadline or not self._process.is_alive():
                raise RuntimeError("the latency relay did not start")
            time.sleep(0.01)

    def close(self) -> None:
        self._process.terminate()
        self._process.join(10)
        shutil.rmtree(self.folder, ignore_errors=True)


def _relay_main(path: str, upstream: str, delay: float) -> None:
    """The relay process: per connection and direction, one thread reads and one sends each
    chunk when it falls due (``time.sleep`` is finer than an event loop's millisecond)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    while True:
        client, _ = server.accept()
        up = socket.socket(socket.AF_UNIX)
        up.connect(upstream)
        for source, target in ((client, up), (up, client)):
            chunks: Chunks = queue.SimpleQueue()
            threading.Thread(target=_take, args=(source, chunks, delay), daemon=True).start()
            threading.Thread(target=_give, args=(target, chunks), daemon=True).start()


def _take(source: socket.socket, chunks: Chunks, delay: float) -> None:
    while chunk := source.recv(65536):
        chunks.put((time.perf_counter() + delay, chunk))
    chunks.put((time.perf_counter() + delay, b""))


def _give(target: socket.socket, chunks: Chunks) -> None:
    while True:
        due, chunk = chunks.get()
        if (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)
        if not chunk:
            target.shutdown(socket.SHUT_WR)
            return
        target.sendall(chunk)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(backend: Backend, before: tuple[int, int] | None) -> tuple[float, float, float]:
    """Print the backend's figures; its p50 and p99 (ms) and turns per second."""
    p50 = statistics.median(backend.times) * 1e3
    p99 = percentile(backend.times, 0.99) * 1e3
    rate = len(backend.times) / backend.wall
    cpu = backend.cpu / len(backend.times) * 1e3
    line = f"{backend.name:>10}: p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   {rate:7.1f} turns/s"
    line += f"   client CPU {cpu:5.2f} ms/turn"
    if backend.counters is not None and before is not None:
        statements, commits = (b - a for a, b in zip(before, backend.counters(), strict=True))
        count = len(backend.times)
        line += f"   {statements / count:5.1f} statements,"
        line += f" {commits / count:4.1f} locked writes per turn"
    print(line)
    return p50, p99, rate


def server_counters(url: str) -> Callable[[], tuple[int, int]]:
    """Reads the statements (``COUNTED``: not the transaction control, which the server
    counts only when it comes as simple queries) and the locked writes (the write transactions
    that take the store's advisory lock, once each; the frame log's take none) the database's
    server ran so far."""

    def read() -> tuple[int, int]:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT (sum(calls) FILTER (WHERE query LIKE ANY(%s)))::bigint,"
                " (sum(calls) FILTER (WHERE query LIKE '%%pg_advisory_xact_lock%%'))::bigint"
                " FROM pg_stat_statements"
                " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (list(COUNTED),),
            ).fetchone()
        assert row is not None
        return int(row[0] or 0), int(row[1] or 0)

    return read


@contextmanager
def backends(concurrent: int, latency: float) -> Iterator[list[Backend]]:
    """The two stores, each with ``concurrent`` sessions, closed (and the cluster stopped) after."""
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        sqlite = stack.enter_context(open_store(Path(folder)))
        cluster = Cluster(("shared_preload_libraries=pg_stat_statements",))
        stack.callback(cluster.stop)
        url = cluster.database()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        if latency > 0:
            relay = Delayed(str(cluster.folder / ".s.PGSQL.5432"), latency)
            stack.callback(relay.close)
            url = url.replace(str(cluster.folder), relay.folder)
        postgres = stack.enter_context(PostgresStore(url))
        made = []
        for name, store in (("SQLite", sqlite), ("PostgreSQL", postgres)):
            sessions = [
                store.create(cwd="/bench", provider="openai", model="gpt-4.1").id
                for _ in range(concurrent)
            ]
            made.append(Backend(name, store, sessions))
        made[1].counters = server_counters(url)
        yield made
        for backend in made:
            backend.frames.shutdown()


async def bench(turns: int, concurrent: int, frames: int, per_write: int, latency: float) -> None:
    with backends(concurrent, latency) as (sqlite, postgres):
        for backend in (sqlite, postgres):  # warm up: connections, prepared statements, caches
            await run_round(backend, max(10, concurrent), frames, per_write)
            backend.times.clear()
            backend.wall = backend.cpu = 0.0
        before = postgres.counters() if postgres.counters is not None else None
        for index in range(ROUNDS):
            order = (sqlite, postgres) if index % 2 == 0 else (postgres, sqlite)
            for backend in order:
                await run_round(backend, max(1, turns // ROUNDS), frames, per_write)
        print(
            f"one turn: 4 messages, {frames} frames in writes of {per_write}, lease taken and"
            f" given back; {concurrent} session(s) at once, {len(sqlite.times)} turns each;"
            f" PostgreSQL {latency * 1e3:.2f} ms of round trip away"
        )
        s50, s99, srate = report(sqlite, None)
        p50, p99, prate = report(postgres, before)
        print(
            f"PostgreSQL / SQLite: p50 {p50 / s50:.2f}x   p99 {p99 / s99:.2f}x"
            f"   turns/s {prate / srate:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="timed turns per backend")
    parser.add_argument("--concurrent", type=int, default=1, help="sessions taking turns at once")
    parser.add_argument("--frames", type=int, default=40, help="frames a turn streams")
    parser.add_argument("--per-write", type=int, default=10, help="frames per frame-log write")
    parser.add_argument(
        "--latency", type=float, default=0.0, help="ms added to each round trip to PostgreSQL"
    )
    args = parser.parse_args()
    shape = (max(1, args.concurrent), args.frames, max(1, args.per_write), args.latency / 1e3)
    asyncio.run(bench(args.turns, *shape))


if __name__ == "__main__":
    main()
