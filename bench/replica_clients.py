"""One client process of ``bench/replicas_haproxy.py``: its share of the sessions, each a runner
that prompts and an observer that resumed the session, both web sockets to the URL given
(HAProxy's, or one replica's), every frame of their replies timed on arrival.

It opens the sessions, prints ``ready``, waits for a line on stdin, prompts (at once, or spread
over ``--ramp`` seconds interleaved with the other processes' prompts, ``--part K/N``), then
prints one JSON line: each session's pair (whether both clients share a replica) with its
frames' arrivals, the failed prompts' errors, how late its event loop was, and its CPU seconds.

    .venv/bin/python bench/replica_clients.py ws://127.0.0.1:PORT/ws --sessions 100 --part 0/3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

from replicas import AUTH, arrivals

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.server.support import Socket

BATCH = 50
"""Web sockets opened at once (the replicas' accept queues stay short)."""


TICK = 0.005
"""Seconds between two checks of this process's event loop."""


async def loop_lag(out: list[float]) -> None:
    """Until cancelled, how late each wake-up ``TICK`` seconds apart comes, in milliseconds: a
    frame read late by the clients' loop is timed late (by as much as the loop was)."""
    while True:
        asked = time.perf_counter() + TICK
        await asyncio.sleep(TICK)
        out.append((time.perf_counter() - asked) * 1000)


async def open_sockets(url: str, count: int) -> list[tuple[Socket, str]]:
    """``count`` connected sockets to ``url``, each with the replica it landed on."""
    out: list[tuple[Socket, str]] = []
    while len(out) < count:
        batch = [Socket(url, AUTH, {"max_size": None}) for _ in range(min(BATCH, count - len(out)))]
        for sock in await asyncio.gather(*(s.__aenter__() for s in batch)):
            assert sock.conn is not None and sock.conn.response is not None
            out.append((sock, sock.conn.response.headers.get("x-replica", "alone")))
    return out


def pair(
    runners: list[tuple[Socket, str]], observers: list[tuple[Socket, str]]
) -> list[tuple[Socket, Socket, bool]]:
    """Each runner with an observer: on its replica for even ones, on another for odd ones
    where the pools allow (otherwise whichever is left); True where both share a replica."""
    pools: dict[str, list[Socket]] = {}
    for sock, name in observers:
        pools.setdefault(name, []).append(sock)
    out = []
    for i, (runner, name) in enumerate(runners):
        others = sorted((n for n in pools if n != name and pools[n]), key=lambda n: -len(pools[n]))
        wanted = [name, *others] if i % 2 == 0 else [*others, name]
        chosen = next(n for n in wanted if pools.get(n))
        out.append((runner, pools[chosen].pop(), chosen == name))
    return out


async def prompt_at(socket: Socket, session_id: str, wait: float) -> None:
    """Prompt the session ``wait`` seconds from now (at once when 0)."""
    if wait > 0:
        await asyncio.sleep(wait)
    await socket.send("agent", type="prompt", session_id=session_id, text="go")


def starts(count: int, ramp: float, part: int, parts: int) -> list[float]:
    """Seconds from ``go`` to each of the ``count`` prompts of client process ``part`` (of
    ``parts``): the processes' prompts interleaved, evenly over ``ramp`` seconds in all."""
    total = count * parts
    return [ramp * (i * parts + part) / total for i in range(count)]


async def clients(url: str, count: int, ramp: float, part: int, parts: int) -> None:
    """One client process (``--clients`` of the bench share the sessions): open ``count`` sessions
    through ``url``, say ``ready``, prompt them once told ``go`` on stdin (spread over ``ramp``
    seconds with the other processes' prompts), then write what it timed as one JSON line: each
    session's pair, its frames' arrivals, failures, loop lag."""
    gc.disable()  # a collection of this process's many objects would hold the timing loop up
    runners = await open_sockets(url, count)
    observers = await open_sockets(url, count)
    pairs = pair(runners, observers)
    ids = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        opened = await asyncio.gather(*(r.call("agent", type="open") for r, _, _ in chunk))
        ids += [o["session_id"] for o in opened]
        await asyncio.gather(
            *(
                o.call("agent", type="resume", session_id=s, after=0)
                for (_, o, _), s in zip(chunk, ids[start:], strict=False)
            )
        )
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    lag: list[float] = []
    cpu = time.process_time()
    lags = asyncio.create_task(loop_lag(lag))
    waits = starts(len(pairs), ramp, part, parts)
    prompted = asyncio.gather(
        *(prompt_at(r, s, w) for (r, _, _), s, w in zip(pairs, ids, waits, strict=True))
    )
    timed: list[tuple[dict[int, float], dict[int, float]]] = [({}, {}) for _ in pairs]
    ends = await asyncio.gather(
        *(arrivals(r, s, here) for (r, _, _), s, (here, _) in zip(pairs, ids, timed, strict=True)),
        *(
            arrivals(o, s, there)
            for (_, o, _), s, (_, there) in zip(pairs, ids, timed, strict=True)
        ),
    )
    lags.cancel()
    await prompted
    failed = [str(end.get("message", end)) for end in ends if end["type"] == "failed"]
    sessions = [
        [same, here, there] for (_, _, same), (here, there) in zip(pairs, timed, strict=True)
    ]
    cpu = time.process_time() - cpu
    print(json.dumps({"sessions": sessions, "failed": failed, "lag": lag, "cpu": cpu}), flush=True)
    for sock, _ in runners + observers:
        await sock.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds the prompts start over")
    parser.add_argument("--part", default="0/1", help="this process's share: K/N")
    args = parser.parse_args()
    part, parts = map(int, args.part.split("/"))
    asyncio.run(clients(args.url, args.sessions, args.ramp, part, parts))


if __name__ == "__main__":
    main()
