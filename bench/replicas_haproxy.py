"""Many concurrent streaming sessions over three ``openheim serve`` replicas behind HAProxy
(the rig of tests/server/replicas.py: one private PostgreSQL cluster, Debian's haproxy),
against the same load on one replica alone.

Each session has a runner (it prompts) and an observer (it resumed the session), each a web
socket through HAProxy, so round-robin spreads them over the replicas; the replica each one
landed on is the ``X-Replica`` header of its upgrade answer. Half the observers are picked on
their runner's replica and half on another. Per frame of the streamed replies, the observer's
arrival minus the runner's is the added latency, reported apart for an observer on the same
replica and on another (p50, p99). Frames per CPU second: the frames both clients of every
session received, over the CPU seconds the replicas spent (user + system, from /proc) while
the replies streamed; the same load on one replica alone (no HAProxy) gives the baseline.

    .venv/bin/python bench/replicas_haproxy.py --sessions 300 --frames 300 --delay 0.02

The fake model runs in a process of its own, as a remote API would, and the clients in
``--clients`` processes (``replica_clients.py``; each session's two clients in one), first in
line for a core (``FIRST``): one process's event loop, busy with every frame, or a client
waiting for a core would time frames late. How late the clients' loops were is reported too:
a latency far below it cannot be told apart.

Starting 300 prompts at once takes the replicas some seconds (each takes its lease and stores its
message), so with short replies the first sessions end before the last begin. The replies are
6 seconds long by default, and the added latency is also reported apart for the frames sent
while every session streamed. ``--ramp`` spreads the prompts' starts evenly over that many
seconds instead (the deltas of the sessions then no longer come in step).

Every process of the rig shares the machine's cores, so each run also says where they went
(``/proc``): the replicas, the load itself (the clients and the fake model, which in a
deployment run elsewhere), and the rest (PostgreSQL, HAProxy, the kernel). A machine busy near
all its cores delays every step of a frame's way, and the added latency with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from replicas import fleet as solo_fleet
from replicas import pct

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pgcluster import Cluster  # noqa: E402
from tests.server.replicas import fleet as haproxy_fleet  # noqa: E402

SERVER = "[server]\nmax_connections = 2000\nmax_connections_per_address = 2000\n"
"""Every client comes from one address (HAProxy's, or this process's): room for all of them."""
Reply = tuple[list[str], float]
"""A streamed reply: its chunks, and the seconds between two."""


MODEL = """
import json, sys, threading
from openheim.testing import FakeLLMServer, FakeReply
chunks, delay, count = json.loads(sys.argv[1])
reply = FakeReply(chunks=chunks, chunk_delay=delay)
with FakeLLMServer([reply] * count) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""
"""The fake model's process: it serves ``count`` replies until its stdin closes."""


@dataclass
class Model:
    """The fake model in its own process (``MODEL``)."""

    base_url: str
    pid: int


@contextlib.contextmanager
def model_apart(chunks: list[str], delay: float, count: int) -> Iterator[Model]:
    """A fake model streaming ``count`` replies of ``chunks``, ``delay`` seconds apart, from a
    process of its own."""
    with subprocess.Popen(
        [sys.executable, "-c", MODEL, json.dumps([chunks, delay, count])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        try:
            yield Model(process.stdout.readline().strip(), process.pid)
        finally:
            process.stdin.close()
            process.wait(timeout=30)


@dataclass
class Load:
    """What one run measured."""

    same: list[float] = field(default_factory=list)
    other: list[float] = field(default_factory=list)
    steady_same: list[float] = field(default_factory=list)
    steady_other: list[float] = field(default_factory=list)
    """The same, for the frames sent while every session streamed (``window``)."""
    window: float = 0.0
    """Seconds from the last session's first frame to the first session's last one."""
    frames: int = 0
    lag: list[float] = field(default_factory=list)
    """Milliseconds the client processes' event loops, which time the frames, were late."""
    failed: list[str] = field(default_factory=list)
    """The errors of the prompts that failed (each one's frames are counted up to its end)."""
    cpu: float = 0.0
    wall: float = 0.0
    machine: float = 0.0
    """CPU seconds the whole machine was busy (every core, from ``/proc/stat``)."""
    generator: float = 0.0
    """CPU seconds of the load's own processes: the clients and the fake model."""

    @property
    def per_cpu(self) -> float:
        return self.frames / self.cpu if self.cpu else 0.0


CLIENTS = Path(__file__).with_name("replica_clients.py")
"""The client processes' script."""
FIRST = ("nice", "-n", "-10")
"""The clients run before the servers when both wait for a core (where this may raise a
priority, as root; elsewhere they run as the rest): on a real deployment they are other
machines, and a client kept waiting times its frames late by as long."""


def machine_seconds() -> float:
    """CPU seconds the machine has been busy so far, over all its cores (``/proc/stat``)."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait; steal (fields[7]) is the host's, not ours
    return (sum(fields[:7]) - idle) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have spent so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def split(total: int, parts: int) -> list[int]:
    """``total`` sessions over ``parts`` client processes, as evenly as can be (none empty)."""
    return [n for n in (total // parts + (i < total % parts) for i in range(parts)) if n]


@dataclass(frozen=True)
class Clients:
    """The clients of a run: how many sessions, over how many processes (one would be the
    slowest part: its loop, busy with every frame, would time frames late), their prompts
    spread over ``ramp`` seconds (0: all at once)."""

    sessions: int
    processes: int
    ramp: float


def load(url: str, pids: Sequence[int], model: Model, plan: Clients) -> Load:
    """``plan``'s sessions through ``url`` (served by the processes ``pids``, replying with
    ``model``); their frames timed."""
    counts = split(plan.sessions, plan.processes)
    script = [*FIRST, sys.executable, str(CLIENTS), url, "--ramp", str(plan.ramp)]
    started = [
        subprocess.Popen(
            [*script, "--sessions", str(n), "--part", f"{part}/{len(counts)}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for part, n in enumerate(counts)
    ]
    try:
        for process in started:
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
        result = Load()
        cpu, llm, machine = cpu_seconds(pids), cpu_seconds([model.pid]), machine_seconds()
        began = time.perf_counter()
        for process in started:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        reports = [json.loads(process.communicate(timeout=600)[0]) for process in started]
        result.wall = time.perf_counter() - began
        result.cpu = cpu_seconds(pids) - cpu
        result.machine = machine_seconds() - machine
        result.generator = cpu_seconds([model.pid]) - llm
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
    timed = [
        (same, {int(k): v for k, v in here.items()}, {int(k): v for k, v in there.items()})
        for report in reports
        for same, here, there in report["sessions"]
    ]
    for report in reports:
        result.failed += report["failed"]
        result.lag += report["lag"]
        result.generator += report["cpu"]
    measure(result, timed)
    return result


def measure(result: Load, timed: list[tuple[bool, dict[int, float], dict[int, float]]]) -> None:
    """Each frame's added latency into ``result``, apart for the steady window."""
    begun = max(min(here.values()) for _, here, _ in timed if here)
    ended = min(max(here.values()) for _, here, _ in timed if here)
    result.window = max(0.0, ended - begun)
    for same, here, there in timed:
        assert sorted(there) == sorted(here), "a frame was lost or doubled"
        added = [((there[s] - here[s]) * 1000, begun <= here[s] <= ended) for s in here]
        (result.same if same else result.other).extend(ms for ms, _ in added)
        steady = result.steady_same if same else result.steady_other
        steady.extend(ms for ms, during in added if during)
        result.frames += len(here) + len(there)


def behind_haproxy(store_url: str, reply: Reply, plan: Clients) -> Load:
    """The load on the rig's three replicas behind HAProxy."""
    with tempfile.TemporaryDirectory() as folder, model_apart(*reply, plan.sessions) as llm:
        root = Path(folder)
        (root / "work").mkdir()
        with haproxy_fleet(root, root / "work", llm, store_url, SERVER) as proxied:
            pids = [process.pid for process in proxied.replicas.values()]
            return load(proxied.ws_url + "/ws", pids, llm, plan)


def one_alone(store_url: str, reply: Reply, plan: Clients) -> Load:
    """The same load on one replica alone, its clients connected to it directly."""
    with (
        tempfile.TemporaryDirectory() as folder,
        model_apart(*reply, plan.sessions) as llm,
        solo_fleet(Path(folder), llm, store_url, 1, SERVER) as (replica,),
    ):
        return load(replica.ws, [replica.process.pid], llm, plan)


def cores(run: Load) -> str:
    """Where the machine's cores went during ``run``, on average."""
    count = os.cpu_count() or 1
    rest = run.machine - run.cpu - run.generator
    return (
        f"  cores busy {run.machine / run.wall:.2f} of {count}: replicas {run.cpu / run.wall:.2f},"
        f" the load (clients, fake model) {run.generator / run.wall:.2f}, the rest (PostgreSQL,"
        f" HAProxy, the kernel) {rest / run.wall:.2f}"
    )


def _line(label: str, values: list[float]) -> str:
    if not values:
        return f"{label}: none"
    return (
        f"{label}, {len(values)} frames: p50 {statistics.median(values):.1f} ms, "
        f"p99 {pct(values, 99):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--frames", type=int, default=300, help="deltas per reply")
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--clients", type=int, default=3, help="client processes")
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds the prompts start over")
    args = parser.parse_args()
    plan = Clients(args.sessions, args.clients, args.ramp)
    reply = ([f"w{i} " for i in range(args.frames)], args.delay)
    cluster = Cluster()
    try:
        three = behind_haproxy(cluster.database(), reply, plan)
        alone = one_alone(cluster.database(), reply, plan)
    finally:
        cluster.stop()
    print(
        f"{args.sessions} sessions x {args.frames} deltas, {args.delay * 1000:.0f} ms apart, "
        f"prompts started over {args.ramp:g} s"
    )
    print(_line("three replicas, observer on the runner's replica", three.same))
    print(_line("three replicas, observer on another replica", three.other))
    print(f"while every session streamed ({three.window:.1f} s of the three replicas' run):")
    print(_line("  observer on the runner's replica", three.steady_same))
    print(_line("  observer on another replica", three.steady_other))
    print(_line("one replica alone, observer on it", alone.same))
    print(_line("the clients' event loops, late by", three.lag).replace("frames", "checks"))
    for label, run in (("three replicas", three), ("one replica alone", alone)):
        if run.failed:
            print(f"{label}: {len(run.failed)} prompts failed, the first: {run.failed[0]}")
        print(
            f"{label}: {run.frames} frames in {run.wall:.1f} s, replicas' CPU {run.cpu:.1f} s, "
            f"{run.per_cpu:.0f} frames per CPU second"
        )
        print(cores(run))
    if alone.per_cpu:
        print(
            "ratio of frames per CPU second, three replicas over one alone: "
            f"{three.per_cpu / alone.per_cpu:.2f}"
        )


if __name__ == "__main__":
    main()
