"""``openheim serve`` under many WebSocket sessions at once, each streaming from FakeLLMServer.

Three processes: the fake model (it notes when each delta leaves it), ``openheim serve`` and
the clients (this one). Prints:

- latency: for every delta, the time from the fake model sending it to the client receiving
  its ``text_delta`` frame (p50, p99; target p99 <= 10 ms), each delta ``--delay`` seconds after
  the one before on its stream's own clock, in two rounds: ``steady``, every session streaming
  at once (the prompts spread over ``STEADY_RAMP`` seconds, each reply long enough that all of
  them stream together for a few seconds), and ``burst``, every prompt sent in the same moment
  (the thousand prompts then begin while the first of them already stream); with, for each, the
  most deltas the fake model sent in any 5 ms, the shape of the load;
- throughput: frames per second delivered to all clients when every reply streams as fast as
  it can, beside a plain Starlette WebSocket server sending the same number of frames to the
  same number of clients (taking turns, A B A B);
- memory: the server's resident memory per idle connected socket, and per idle session
  opened on one (target <= 50 KB).

    .venv/bin/python bench/server_ws.py [--sessions 1000] [--delay 0.2] [--latency steady burst]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server_procs import (
    MARK,
    TOKEN,
    cpu_seconds,
    fake_llm,
    rss_kib,
    start_echo,
    start_openheim,
)
from websockets.asyncio.client import ClientConnection, connect

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Run:
    """What the clients of one round saw: frames, and when each marked delta arrived."""

    frames: int = 0
    received: dict[tuple[int, int], float] = field(default_factory=dict)
    first: list[float] = field(default_factory=list)
    """Per session, seconds from sending the prompt to receiving its first delta."""


async def request(ws: ClientConnection, rid: int, **data: Any) -> dict[str, Any]:
    """Send an agent request and wait for its reply (other frames are skipped)."""
    await ws.send(json.dumps({"channel": "agent", "data": {**data, "id": rid}}))
    while True:
        reply: dict[str, Any] = json.loads(await ws.recv())["data"]
        if reply.get("id") == rid:
            return reply


ROUNDS = {"steady": (5.0, 40), "burst": (0.0, 10)}
"""Latency rounds: seconds the prompts are spread over, and deltas per reply. ``steady``: with
0.2 s between deltas, every stream is still going when the last prompt begins, and all of them
stream together for three seconds (5,000 deltas a second at a thousand sessions)."""
WINDOW = 0.005
"""Seconds of the windows the fake model's sending is counted in (the load's burstiness)."""

OPENING = 32
"""Sessions opened at once (each costs the server a session's assembly)."""


async def session(url: str, index: int, prompt: str, ready: asyncio.Queue[None],
                  go: asyncio.Event, run: Run, wait: float,
                  opening: asyncio.Semaphore) -> None:  # fmt: skip
    async with connect(f"{url}/ws", additional_headers=AUTH, max_size=None,
                       open_timeout=300) as ws:  # fmt: skip
        async with opening:
            await ws.recv()
            sid = (await request(ws, 1, type="open"))["session_id"]
        ready.put_nowait(None)
        await go.wait()
        await asyncio.sleep(wait)  # the ramp: prompts start spread over --ramp seconds
        data = {"type": "prompt", "id": 2, "session_id": sid, "text": f"{prompt} s{index}"}
        await ws.send(json.dumps({"channel": "agent", "data": data}))
        asked, answered = time.monotonic(), False
        async for text in ws:
            now = time.monotonic()
            run.frames += 1
            event = json.loads(text)["data"].get("event")
            if event is None:
                continue
            if event["type"] == "text_delta":
                if not answered:
                    answered = True
                    run.first.append(now - asked)
                for s, i in MARK.findall(event["text"].encode()):
                    run.received[(int(s), int(i))] = now
            elif event["type"] in ("finished", "failed"):
                break
        await request(ws, 3, type="close", session_id=sid)


async def all_sessions(url: str, count: int, prompt: str, ramp: float = 0.0) -> tuple[Run, float]:
    """``count`` sessions opened, then prompted (all at once, or spread over ``ramp``
    seconds); the elapsed time from the first prompt."""
    ready: asyncio.Queue[None] = asyncio.Queue()
    go = asyncio.Event()
    run = Run()
    opening = asyncio.Semaphore(OPENING)
    tasks = [
        asyncio.create_task(session(url, i, prompt, ready, go, run, ramp * i / count, opening))
        for i in range(count)
    ]
    for _ in range(count):
        await asyncio.wait_for(ready.get(), 300)
    start = time.monotonic()
    go.set()
    await asyncio.gather(*tasks)
    return run, time.monotonic() - start


async def echo_round(url: str, count: int, frames: int) -> tuple[int, float]:
    """``count`` clients each asking the echo server for ``frames`` frames at once."""
    sockets = [await connect(url, max_size=None, open_timeout=300) for _ in range(count)]
    start = time.monotonic()

    async def one(ws: ClientConnection, index: int) -> int:
        await ws.send(f"{frames} s{index}")
        for _ in range(frames):
            await ws.recv()
        return frames

    got = sum(await asyncio.gather(*(one(ws, i) for i, ws in enumerate(sockets))))
    elapsed = time.monotonic() - start
    await asyncio.gather(*(ws.close() for ws in sockets))
    return got, elapsed


async def memory(url: str, pid: int, count: int) -> tuple[float, float]:
    """KiB per idle connected socket, and per idle session opened on one."""
    before = rss_kib(pid)
    sockets = []
    for _ in range(count):
        ws = await connect(f"{url}/ws", additional_headers=AUTH, open_timeout=300)
        await ws.recv()
        sockets.append(ws)
    connected = rss_kib(pid)
    ids = [(await request(ws, 1, type="open"))["session_id"] for ws in sockets]
    opened = rss_kib(pid)
    for ws, sid in zip(sockets, ids, strict=True):
        await request(ws, 2, type="close", session_id=sid)
        await ws.close()
    return (connected - before) / count, (opened - connected) / count


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(args: argparse.Namespace, base_url: str, conn: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        server, url = start_openheim(home, work, base_url)
        echo, echo_url = start_echo()
        try:
            per_socket, per_session = await memory(url, server.pid, args.sessions)
            print(f"memory: {per_socket:.1f} KiB per idle socket, "
                  f"{per_session:.1f} KiB per idle session (target <= 50 KB)")  # fmt: skip
            for name in args.latency:
                ramp, chunks = ROUNDS[name]
                prompt = f"go d{args.delay} c{chunks}"
                cpu = cpu_seconds(server.pid)
                run, elapsed = await all_sessions(url, args.sessions, prompt, ramp)
                cpu = cpu_seconds(server.pid) - cpu
                conn.send("report")
                report_latency(name, args.sessions, run, elapsed, conn.recv(), cpu)
            if args.rounds:
                await throughput(args, url, (server.pid, echo.pid), echo_url)
        finally:
            server.terminate()
            echo.terminate()
            server.wait(30)
            echo.wait(30)


def report_latency(
    name: str, sessions: int, run: Run, elapsed: float, sent: dict[tuple[int, int], float],
    cpu: float,
) -> None:  # fmt: skip
    """Delta latencies (``sent``: when the fake model sent each), the load's shape, the delay
    before each session's first delta, and the server's CPU per frame over the round."""
    latencies = [(t - sent[k]) * 1000 for k, t in run.received.items() if k in sent]
    p = {q: percentile(latencies, q) for q in (0.5, 0.99, 0.999)}
    ramp, chunks = ROUNDS[name]
    print(f"latency, {name} ({sessions} sessions, {chunks} deltas each, prompts spread over "
          f"{ramp:g} s), {len(latencies)} deltas in {elapsed:.1f} s: p50 {p[0.5]:.2f} ms, "
          f"p99 {p[0.99]:.2f} ms (target p99 <= 10 ms), p99.9 {p[0.999]:.2f} ms, "
          f"max {max(latencies):.2f} ms")  # fmt: skip
    first = [t * 1000 for t in run.first]
    per_frame = cpu * 1e6 / max(1, run.frames)
    windows = Counter(int(t / WINDOW) for t in sent.values())
    print(f"  the fake model sent at most {max(windows.values())} deltas in any "
          f"{WINDOW * 1000:g} ms ({len(sent) / len(windows):.0f} on average); first delta "
          f"after its prompt (the model's first text comes two delays in): "
          f"p50 {percentile(first, 0.5):.0f} ms, p99 {percentile(first, 0.99):.0f} ms; "
          f"server CPU {per_frame:.0f} us per frame ({run.frames} frames)")  # fmt: skip
    keys = all_streaming(sent, chunks)
    together = [(run.received[k] - sent[k]) * 1000 for k in keys if k in run.received]
    if together:
        q = {x: percentile(together, x) for x in (0.5, 0.99)}
        print(f"  while every session streams: {len(together)} deltas, p50 {q[0.5]:.2f} ms, "
              f"p99 {q[0.99]:.2f} ms")  # fmt: skip


def all_streaming(sent: dict[tuple[int, int], float], chunks: int) -> list[tuple[int, int]]:
    """The keys of the deltas sent while every session was streaming: after the last first
    delta, before the first last delta (none where the sessions never all streamed at once)."""
    firsts = [t for (_, index), t in sent.items() if index == 0]
    lasts = [t for (_, index), t in sent.items() if index == chunks - 1]
    if not firsts or not lasts or max(firsts) >= min(lasts):
        return []
    begin, end = max(firsts), min(lasts)
    return [key for key, t in sent.items() if begin <= t <= end]


async def throughput(
    args: argparse.Namespace, url: str, pids: tuple[int, int], echo_url: str
) -> None:
    """Frames per second of wall time, and per second of the server process's own CPU (the
    fake model and the clients share the machine, so the second is the server's cost alone)."""
    ours: list[tuple[float, float]] = []
    plain: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        cpu = cpu_seconds(pids[0])
        run, elapsed = await all_sessions(url, args.sessions, f"go d0 c{args.burst}")
        ours.append((run.frames / elapsed, run.frames / (cpu_seconds(pids[0]) - cpu)))
        each = run.frames // args.sessions
        cpu = cpu_seconds(pids[1])
        frames, echo_elapsed = await echo_round(echo_url, args.sessions, each)
        plain.append((frames / echo_elapsed, frames / (cpu_seconds(pids[1]) - cpu)))
    for name, rows in (("openheim", ours), ("plain Starlette echo", plain)):
        wall, cpu = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"throughput, {name}: {wall:,.0f} frames/s, {cpu:,.0f} frames per CPU second")
    ratio = statistics.median(r[1] for r in ours) / statistics.median(r[1] for r in plain)
    print(f"throughput ratio per CPU second, openheim / plain: {ratio:.2f}")


def client_loop() -> Callable[[], asyncio.AbstractEventLoop]:
    """The clients' event loop: uvloop's (installed with the server extra, as the server uses
    it), so that a thousand clients decoding frames add as little of their own delay to the
    latency measured as they can; asyncio's where uvloop is missing."""
    try:
        import uvloop
    except ImportError:
        print("clients: asyncio's event loop (uvloop is not installed)")
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2, help="throughput rounds (0: none)")
    parser.add_argument("--latency", nargs="+", choices=list(ROUNDS), default=list(ROUNDS))
    parser.add_argument("--burst", type=int, default=200, help="deltas per reply, throughput")
    args = parser.parse_args()
    ours, theirs = multiprocessing.Pipe()
    fake = multiprocessing.Process(target=fake_llm, args=(theirs,))
    fake.start()
    try:
        base_url = ours.recv()
        with asyncio.Runner(loop_factory=client_loop()) as runner:
            runner.run(main(args, base_url, ours))
        ours.send("stop")
    finally:
        fake.terminate()
        fake.join(30)


if __name__ == "__main__":
    cli()
