"""Real ``openheim serve`` processes sharing one PostgreSQL store act as one server: a prompt
running on one streams to clients attached to the others (in order, no gap or duplicate,
across a reconnect to a third), approvals and cancels sent to any reach it, a second prompt
is refused the same way everywhere, and a replica killed mid-turn loses nothing."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from openheim.store.base import INTERRUPTED
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import env_for
from tests.pgcluster import Cluster
from tests.server.support import TOKEN, WAIT, Socket, write_config

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Replica:
    process: subprocess.Popen[str]
    url: str

    def socket(self) -> Socket:
        return Socket(self.url.replace("http://", "ws://") + "/ws", AUTH, {})

    def get(self, path: str) -> Any:
        return httpx.get(self.url + path, headers=AUTH, timeout=WAIT).json()


@contextlib.contextmanager
def replicas(
    root: Path, work: Path, llm: FakeLLMServer, url: str, n: int
) -> Iterator[list[Replica]]:
    """``n`` ``openheim serve`` processes, each with a home of its own, on the store ``url``."""
    started: list[Replica] = []
    try:
        for i in range(n):
            home = root / f"replica-{i}"
            home.mkdir()
            write_config(home, llm, f'store_url = "{url}"')
            process = subprocess.Popen(
                [sys.executable, "-m", "openheim", "serve", "--port", "0"],
                cwd=work,
                env=env_for(home, OPENHEIM_SERVER_TOKEN=TOKEN),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
            assert process.stdout is not None
            found = re.search(r"(http://127\.0\.0\.1:\d+)/", process.stdout.readline())
            assert found is not None, "the replica did not print its address"
            started.append(Replica(process, found.group(1)))
        yield started
    finally:
        for replica in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(replica.process.pid, signal.SIGTERM)
            replica.process.wait(timeout=30)


def _write(name: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": "hi\n"})])


def _is(kind: str) -> Any:
    return lambda data: data.get("type") == kind


def _seqs(sock: Socket, sid: str) -> list[int]:
    """The numbers of the session's frames the client got (replies, which echo an id, aside)."""
    frames = [f["data"] for f in sock.seen if f["channel"] == "agent"]
    return [d["seq"] for d in frames if d.get("session_id") == sid and "id" not in d]


async def test_a_prompt_on_one_replica_streams_to_clients_of_the_others(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [_write("a.txt"), _write("b.txt"), FakeReply(chunks=[f"w{i} " for i in range(30)])]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 3) as (a, b, c):
        async with a.socket() as runner:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            first = (await runner.until(_is("approval_request")))["data"]
            async with b.socket() as watcher:
                await watcher.call("agent", type="resume", session_id=sid, after=0)
                answer = {"approval_id": first["approval_id"], "choice": "once"}
                assert (await watcher.call("agent", type="approve", session_id=sid, **answer))[
                    "type"
                ] == "ok"
                second = (await watcher.until(_is("approval_request")))["data"]
                seen = second["seq"]
            async with c.socket() as third:
                await third.call("agent", type="resume", session_id=sid, after=seen)
                answer = {"approval_id": second["approval_id"], "choice": "once"}
                await third.call("agent", type="approve", session_id=sid, **answer)
                await third.events_until_finished(sid)
            await runner.events_until_finished(sid)
    ran = _seqs(runner, sid)
    assert ran == list(range(1, len(ran) + 1))
    resent, *after_seen = _seqs(third, sid)  # the request still waiting, sent again first
    assert resent == seen
    relayed = [s for s in _seqs(watcher, sid) if s <= seen] + after_seen
    assert relayed == ran
    assert (work / "a.txt").exists() and (work / "b.txt").exists()


async def test_a_busy_session_is_refused_alike_and_cancelled_from_any_replica(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    llm = FakeLLMServer([_write("a.txt")])
    with llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner, b.socket() as other:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            await runner.until(_is("approval_request"))
            await other.call("agent", type="resume", session_id=sid, after=0)
            here = await runner.call("agent", type="prompt", session_id=sid, text="again")
            there = await other.call("agent", type="prompt", session_id=sid, text="again")
            assert here["type"] == there["type"] == "error"
            assert there["message"] == here["message"]
            assert "busy" in here["message"]
            assert (await other.call("agent", type="cancel", session_id=sid))["type"] == "ok"
            events = await runner.events_until_finished(sid)
    assert events[-1]["event"]["type"] == "finished"
    assert not (work / "a.txt").exists()


async def test_a_replica_killed_mid_turn_loses_nothing_and_another_goes_on(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [_write("a.txt"), FakeReply(text="carried on")]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            await runner.until(_is("approval_request"))
            acknowledged = _seqs(runner, sid)
            os.killpg(a.process.pid, signal.SIGKILL)
            a.process.wait(timeout=WAIT)
        async with b.socket() as other:
            resumed = await other.call("agent", type="resume", session_id=sid, after=0)
            replayed = _seqs(other, sid)
            await other.call("agent", type="prompt", session_id=sid, text="go on")
            events = await other.events_until_finished(sid)
        stored = b.get(f"/api/sessions/{sid}")["messages"]
    assert replayed == acknowledged and resumed["replayed"] == len(acknowledged)
    assert events[0]["seq"] == acknowledged[-1] + 1
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "user", "assistant"]
    closed = stored[2]["content"][0]
    assert closed["kind"] == "tool_result" and closed["content"] == INTERRUPTED
    assert "carried on" in str(stored[-1])


async def test_clients_attaching_on_other_replicas_mid_stream_see_each_frame_once(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    reply = FakeReply(chunks=[f"w{i} " for i in range(60)], chunk_delay=0.02)
    with FakeLLMServer([reply]) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner, b.socket() as early, b.socket() as late:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await early.call("agent", type="resume", session_id=sid, after=0)
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            await early.until(lambda d: d.get("type") == "event" and d["seq"] > 10)
            await late.call("agent", type="resume", session_id=sid, after=3)
            await runner.events_until_finished(sid)
            await early.events_until_finished(sid)
            await late.events_until_finished(sid)
    ran = _seqs(runner, sid)
    assert len(ran) > 60 and ran == list(range(1, len(ran) + 1))
    assert _seqs(early, sid) == ran
    assert _seqs(late, sid) == ran[3:]


RECOVERY_WAIT = 30.0
"""Seconds the turn cut by a PostgreSQL restart may take to end on each replica: a store pool
that tried to connect while the server was down waits out its reconnect back-off (1 s,
doubling) before it writes or reads again, and the listener reconnects within 2 s of that."""


async def test_replicas_outlive_a_restart_of_postgresql(
    tmp_path: Path, work: Path, pg_url: str, pg_cluster: Cluster
) -> None:
    slow = FakeReply(chunks=[f"w{i} " for i in range(200)], chunk_delay=0.02)
    script = [slow, FakeReply(chunks=["relayed ", "again"])]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner, b.socket() as watcher:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await watcher.call("agent", type="resume", session_id=sid, after=0)
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            await watcher.until(lambda d: d.get("type") == "event" and d["seq"] > 5)
            pg_cluster.restart()
            ended = (await runner.events_until_finished(sid, RECOVERY_WAIT))[-1]["event"]
            await watcher.events_until_finished(sid, RECOVERY_WAIT)
            await runner.call("agent", type="prompt", session_id=sid, text="again")
            await runner.events_until_finished(sid)
            last = (await watcher.events_until_finished(sid))[-1]["event"]
        stored = b.get(f"/api/sessions/{sid}")["messages"]
    if ended["type"] == "failed":  # the outage outlasted a store write: said in one line
        assert "\n" not in ended["message"] and "database" in ended["message"]
    ran = _seqs(runner, sid)
    assert ran == list(range(1, len(ran) + 1)) and _seqs(watcher, sid) == ran
    assert last["type"] == "finished" and last["text"] == "relayed again"
    assert [m["role"] for m in stored][-2:] == ["user", "assistant"]
    assert "relayed again" in str(stored[-1])


async def test_the_next_prompt_on_another_replica_goes_on_from_the_conversation(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [FakeReply(text="one"), FakeReply(text="two")]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as first, b.socket() as second:
            sid = (await first.call("agent", type="open"))["session_id"]
            await second.call("agent", type="resume", session_id=sid, after=0)
            await first.call("agent", type="prompt", session_id=sid, text="first")
            await first.events_until_finished(sid)
            await second.events_until_finished(sid)
            await second.call("agent", type="prompt", session_id=sid, text="second")
            await second.events_until_finished(sid)
            await first.events_until_finished(sid)
        sent = llm.requests[1].messages
    assert [m["content"] for m in sent if m["role"] != "system"] == ["first", "one", "second"]
    numbers = _seqs(first, sid)
    assert numbers == list(range(1, len(numbers) + 1)) and _seqs(second, sid) == numbers
