"""Replicas of ``openheim serve`` on one PostgreSQL store (a private cluster, as the tests run):

(a) the latency a client attached to another replica adds over one attached to the replica
    that runs the prompt: both receive every frame of a streamed reply; per frame, the other
    one's arrival minus the running one's (p50, p99, max);
(b) failover: a replica SIGKILLed while its prompt waits for an approval; the time from the
    kill to a prompt on another replica of that session being accepted and streaming its first
    event, over ``--kills`` kills, each checked to have lost no frame the client had seen.

On one machine a dead replica's lease is free at once (its pid is gone); across machines it
waits for the lease timeout ([server] lease_timeout_secs, 10 s by default) on top.

    .venv/bin/python bench/replicas.py --frames 200 --rounds 5 --kills 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pgcluster import Cluster  # noqa: E402
from tests.server.support import TOKEN, Endpoint, Socket, write_config  # noqa: E402

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall  # noqa: E402

AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Replica:
    """One ``openheim serve`` process with a home of its own."""

    def __init__(self, home: Path, work: Path, llm: Endpoint, url: str, extra: str = "") -> None:
        home.mkdir(parents=True, exist_ok=True)
        write_config(home, llm, f'store_url = "{url}"\n{extra}')
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        env |= {"OPENHEIM_HOME": str(home), "OPENHEIM_SERVER_TOKEN": TOKEN}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openheim", "serve", "--port", "0"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        found = re.search(r"(http://127\.0\.0\.1:\d+)/", self.process.stdout.readline())
        assert found is not None, "the replica did not start"
        self.ws = found.group(1).replace("http://", "ws://") + "/ws"

    def socket(self) -> Socket:
        return Socket(self.ws, AUTH, {"max_size": None})

    def stop(self, sig: int = signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        self.process.wait(timeout=30)


@contextlib.contextmanager
def fleet(root: Path, llm: Endpoint, url: str, n: int, extra: str = "") -> Iterator[list[Replica]]:
    """``n`` replicas on the store ``url``, ``extra`` in each one's config; stopped at the end."""
    work = root / "work"
    work.mkdir(exist_ok=True)
    started: list[Replica] = []
    try:
        for i in range(n):
            started.append(Replica(root / f"home-{i}", work, llm, url, extra))
        yield started
    finally:
        for replica in started:
            replica.stop()


async def arrivals(sock: Socket, sid: str, out: dict[int, float]) -> dict[str, Any]:
    """Each event frame's arrival time by its number, up to the finished (or failed) one,
    which is returned."""
    while True:
        data = (await sock.next())["data"]
        if data.get("type") == "event" and data.get("session_id") == sid:
            out[data["seq"]] = time.perf_counter()
            if data["event"]["type"] in ("finished", "failed"):
                return dict(data["event"])


async def latency(root: Path, url: str, frames: int, rounds: int, delay: float) -> list[float]:
    """Per frame, milliseconds the other replica's client got it after the running one's."""
    reply = FakeReply(chunks=[f"w{i} " for i in range(frames)], chunk_delay=delay)
    added: list[float] = []
    with FakeLLMServer([reply] * rounds) as llm, fleet(root, llm, url, 2) as (a, b):
        async with a.socket() as near, b.socket() as far:
            sid = (await near.call("agent", type="open"))["session_id"]
            await far.call("agent", type="resume", session_id=sid, after=0)
            for _ in range(rounds):
                here: dict[int, float] = {}
                there: dict[int, float] = {}
                await near.send("agent", type="prompt", session_id=sid, text="go")
                await asyncio.gather(arrivals(near, sid, here), arrivals(far, sid, there))
                assert sorted(there) == sorted(here), "a frame was lost or doubled"
                added += [(there[s] - here[s]) * 1000 for s in here]
    return added


async def failover(root: Path, url: str, kills: int) -> list[float]:
    """Seconds from each SIGKILL to the session streaming again on another replica."""
    write = FakeReply(tool_calls=[FakeToolCall("write_file", {"path": "x", "content": "x"})])
    script = [write, FakeReply(text="on")] * kills
    times: list[float] = []
    with FakeLLMServer(script) as llm, fleet(root, llm, url, 1) as (survivor,):
        work = root / "work"
        for _ in range(kills):
            doomed = Replica(root / f"home-k{len(times)}", work, llm, url)
            async with doomed.socket() as runner:
                sid = (await runner.call("agent", type="open"))["session_id"]
                await runner.call("agent", type="prompt", session_id=sid, text="go")
                await runner.until(lambda d: d.get("type") == "approval_request")
                seen = [f["data"]["seq"] for f in runner.seen if _numbered(f, sid)]
                doomed.stop(signal.SIGKILL)
                killed = time.perf_counter()
            async with survivor.socket() as other:
                await other.call("agent", type="resume", session_id=sid, after=0)
                replayed = [f["data"]["seq"] for f in other.seen if _numbered(f, sid)]
                assert replayed == seen, "frames seen before the kill were lost"
                while (await other.call("agent", type="prompt", session_id=sid, text="on"))[
                    "type"
                ] != "ok":
                    await asyncio.sleep(0.05)
                await other.until(lambda d: d.get("type") == "event")
                times.append(time.perf_counter() - killed)
                await other.events_until_finished(sid)
    return times


def _numbered(frame: dict[str, Any], sid: str) -> bool:
    data = frame["data"]
    return frame["channel"] == "agent" and data.get("session_id") == sid and "id" not in data


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.005, help="seconds between deltas")
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    cluster = Cluster()
    try:
        with tempfile.TemporaryDirectory() as folder:
            added = await latency(Path(folder), cluster.database(), args.frames, args.rounds,
                                  args.delay)  # fmt: skip
        print(
            f"(a) added latency, client on another replica vs on the running one, "
            f"{len(added)} frames: p50 {statistics.median(added):.1f} ms, "
            f"p99 {pct(added, 99):.1f} ms, max {max(added):.1f} ms"
        )
        with tempfile.TemporaryDirectory() as folder:
            times = await failover(Path(folder), cluster.database(), args.kills)
        print(
            f"(b) failover on one machine, {len(times)} kills, nothing lost: "
            f"p50 {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    asyncio.run(main())
