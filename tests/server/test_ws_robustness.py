"""``/ws`` against clients that misbehave or lag, through a real uvicorn: a client that stops
reading while it asks for big frames is disconnected before its queued bytes pass the budget; a
client re-attaching after frames it never saw were dropped is told which; a connection whose
session another client closed is told so, and how to go on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.types import Send
from starlette.websockets import WebSocket
from websockets.exceptions import ConnectionClosed

from openheim.server import ws as ws_module
from openheim.server.context import ServerContext
from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import Socket, served

BUDGET = 1024 * 1024
BIG = 60_000
"""A file a little under the test server's 64 KiB frame limit."""


class Watched(ws_module.Connection):
    """A connection that records the largest byte total of the text frames in its queue,
    summed from the queue itself after each frame queued, and when it overflowed."""

    made: list[Watched] = []

    def __init__(self, websocket: WebSocket, context: ServerContext, send: Send | None) -> None:
        super().__init__(websocket, context, send)
        self.peak = 0
        self.overflow = asyncio.Event()
        Watched.made.append(self)

    def _enqueue(self, text: str) -> None:
        super()._enqueue(text)
        queued = sum(len(item) for item in self.queue._items if isinstance(item, str))
        self.peak = max(self.peak, queued)
        if self.overflowed:
            self.overflow.set()


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[Watched]:
    monkeypatch.setattr(ws_module, "MAX_PENDING_BYTES", BUDGET)
    monkeypatch.setattr(ws_module, "Connection", Watched)
    monkeypatch.setattr(Watched, "made", [])
    return Watched.made


async def test_a_client_that_stops_reading_big_frames_is_disconnected_within_the_budget(
    home: Path, work: Path, watched: list[Watched]
) -> None:
    (work / "big.txt").write_text("x" * BIG)
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket(max_queue=1) as ws:
            conn = watched[0]
            sent = 0
            with pytest.raises(ConnectionClosed):  # the server gives up on it
                while sent < 2000 and not conn.overflow.is_set():
                    await ws.send("fs", type="read", path="big.txt")
                    sent += 1
                async with asyncio.timeout(10):
                    await conn.overflow.wait()
                while True:  # now read: the frames the kernel held, then the close
                    await ws.next()
    assert conn.overflowed and 0 < conn.peak <= BUDGET
    assert sent * BIG > 2 * BUDGET  # it overflowed on bytes, far below 50,000 frames
    assert ws.conn is not None and ws.conn.close_code == 1013


async def test_a_client_that_reads_the_same_big_frames_stays_connected(
    home: Path, work: Path, watched: list[Watched]
) -> None:
    (work / "big.txt").write_text("x" * BIG)
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            for _ in range(4):
                ids = [await ws.send("fs", type="read", path="big.txt") for _ in range(10)]
                replies = [await ws.until(replying(rid)) for rid in ids]
                assert all(len(r["data"]["content"]) == BIG for r in replies)
            pong = await ws.call("system", type="ping")
    assert pong["type"] == "pong"
    assert not watched[0].overflowed


def replying(rid: str) -> Callable[[dict[str, Any]], bool]:
    """A match for the reply to request ``rid``."""
    return lambda data: data.get("id") == rid


async def prompted(ws: Socket) -> tuple[str, int]:
    """Open a session and run one prompt; its id and last seq."""
    sid = (await ws.call("agent", type="open"))["session_id"]
    await ws.call("agent", type="prompt", session_id=sid, text="go")
    events = await ws.events_until_finished(sid)
    return sid, events[-1]["seq"]


@pytest.mark.parametrize("saved", [True, False], ids=["stored", "unsaved"])
async def test_a_resume_past_the_kept_frames_is_told_what_it_missed(
    home: Path, work: Path, saved: bool
) -> None:
    extra = "" if saved else "save_sessions = false"
    with FakeLLMServer([FakeReply(chunks=["a "] * 12)]) as llm:
        async with served(home, work, llm, extra=extra) as server:
            server.context.hub.max_log = 5
            server.context.store.frames.keep = 5
            async with server.socket() as first:
                sid, last = await prompted(first)
            async with server.socket() as late:
                reply = await late.call("agent", type="resume", session_id=sid, after=2)
                frames = [f["data"] for f in late.seen[1:-1]]
            async with server.socket() as near:
                whole = await near.call("agent", type="resume", session_id=sid, after=last - 5)
                near_frames = [f["data"] for f in near.seen[1:-1]]
    assert last > 10
    notice, replayed = frames[0], frames[1:]
    assert notice["type"] == "missed" and notice["session_id"] == sid
    assert (notice["first"], notice["last"]) == (3, last - 5)
    assert f"frames 3 to {last - 5} of session {sid}" in notice["message"]
    stored = f"stored messages: GET /api/sessions/{sid}"
    lost = "the session is not stored: those frames cannot be recovered"
    assert notice["hint"].endswith(stored) if saved else notice["hint"] == lost
    assert [f["seq"] for f in replayed] == list(range(last - 4, last + 1))
    assert reply["type"] == "opened" and reply["replayed"] == 5
    assert [f["seq"] for f in near_frames] == list(range(last - 4, last + 1))
    assert whole["replayed"] == 5  # nothing missed: no notice


async def test_a_session_closed_by_another_client_says_so(home: Path, work: Path) -> None:
    with FakeLLMServer(["after resuming"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            async with server.socket() as other:
                sid = (await ws.call("agent", type="open"))["session_id"]
                closed = await other.call("agent", type="close", session_id=sid)
            refused = [
                await ws.call("agent", type=kind, session_id=sid, text="go")
                for kind in ("prompt", "cancel", "set_model", "compact")
            ]
            resumed = await ws.call("agent", type="resume", session_id=sid)
            again = await ws.call("agent", type="prompt", session_id=sid, text="go")
            events = await ws.events_until_finished(sid)
    assert closed["type"] == "ok" and resumed["type"] == "opened" and again["type"] == "ok"
    assert events[-1]["event"]["type"] == "finished"
    for reply in refused:
        assert reply["type"] == "error"
        assert reply["message"] == f"session {sid} was closed by another client"
        assert reply["hint"] == "resume it with resume (session_id, after: the last seq you saw)"


async def test_a_session_deleted_over_rest_says_so(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            async with server.client() as http:
                assert (await http.delete(f"/api/sessions/{sid}")).status_code == 200
            refused = await ws.call("agent", type="prompt", session_id=sid, text="go")
    assert refused["type"] == "error"
    assert refused["message"] == f"session {sid} was closed by another client and is not stored"
    assert refused["hint"] == "open a new session with open"


async def test_a_session_deleted_mid_prompt_leaves_no_frame_behind(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="stalled", hang_at=0)]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="go")
            await ws.until(lambda d: d.get("event", {}).get("type") == "iteration_start")
            async with server.client() as http:
                assert (await http.delete(f"/api/sessions/{sid}")).status_code == 200
            writer = server.context.hub.writer
            left = [row for row in writer.rows if row[0] == sid]
            writer.flush()  # raised an integrity error for the deleted session's frames
            stored = server.context.store.frames.last(sid)
    assert left == [] and stored == 0
