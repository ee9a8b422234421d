"""CPU per streamed delta on the server's path from a run's hand-over to the WebSocket send.

N sessions in one process, each a real ``Hub`` session (stored, with its frame log) watched by
a real ``/ws`` ``Connection`` whose ASGI ``send`` only counts the frame (no socket, so the
figure leaves out the send system call and the client). The model is scripted: every session's
reply waits for the same tick before each chunk, as a socket read would, so each delta costs
its run one wake-up, as in the server, and a thousand deltas are ready in the same turn of the
event loop. The figure is the process's CPU time over the streaming rounds divided by the
deltas: the path (redaction, numbering, frame log, encoding, the send call, task wake-ups)
plus the scripted model's small share, which does not change with the path.

    .venv/bin/python bench/hub_path.py [--sessions 1000] [--chunks 40] [--prompts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from starlette.types import Message as AsgiMessage
from starlette.websockets import WebSocket

from openheim.events import TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, StreamItem
from openheim.runtime import Runtime, SessionOptions
from openheim.server.context import ServerContext
from openheim.server.hub import Hub
from openheim.server.live import Live
from openheim.server.ws import Connection
from openheim.testing import Reply, ScriptedProvider

PATIENCE = 60.0
"""Seconds the bench waits for one step (every reply waiting, a round of frames)."""


class Pace:
    """One tick for every waiting reply at once."""

    def __init__(self) -> None:
        self.tick: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting = 0

    async def next(self) -> None:
        self.waiting += 1
        try:
            await self.tick
        finally:
            self.waiting -= 1

    def fire(self) -> None:
        tick, self.tick = self.tick, asyncio.get_running_loop().create_future()
        tick.set_result(None)


class Tally:
    """Frames sent on every socket together."""

    def __init__(self) -> None:
        self.frames = 0


class Sink:
    """The server's side of one socket: counts the frames sent in ``tally``."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    async def receive(self) -> AsgiMessage:
        return {"type": "websocket.connect"}

    async def send(self, message: AsgiMessage) -> None:
        if message["type"] == "websocket.send":
            self.tally.frames += 1


def reply(pace: Pace, chunks: int) -> Any:
    async def stream(request: ModelRequest) -> AsyncIterator[StreamItem]:
        for _ in range(chunks):
            await pace.next()
            yield TextDelta("word ")
        yield Reply(text="word " * chunks).response(request.model)

    return stream


async def attach(live: Live, sink: Sink) -> asyncio.Task[None]:
    websocket = WebSocket({"type": "websocket", "path": "/ws"}, sink.receive, sink.send)
    await websocket.accept()
    context = cast(ServerContext, object())
    conn = Connection(websocket, context, sink.send)
    live.subscribers.add(conn)
    return asyncio.create_task(conn.writer())


async def until(done: Any, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if done():
            return
        await asyncio.sleep(0)
    raise SystemExit(f"gave up waiting for {what}")


async def one_prompt(lives: list[Live], tally: Tally, pace: Pace, chunks: int) -> float:
    """Run one prompt on every session; CPU seconds of its delta rounds."""
    n = len(lives)
    for live in lives:
        await live.start(Message.user("go"))
    await until(lambda: pace.waiting == n, "every reply to wait for its first tick")
    cpu = 0.0
    for _ in range(chunks):
        target = tally.frames + n
        start = time.process_time()
        pace.fire()
        await until(lambda target=target: tally.frames >= target, "a round of frames")
        cpu += time.process_time() - start
    await asyncio.gather(*(live.task for live in lives if live.task is not None))
    return cpu


async def main(sessions: int, chunks: int, prompts: int) -> None:
    kind = f"bench-{uuid.uuid4().hex[:8]}"
    provider = ScriptedProvider(name=kind)
    Runtime.register_provider(kind, lambda settings, client: provider)
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        work.mkdir()
        runtime = Runtime(provider=kind, model="bench", data_dir=home, work_dir=work)
        store = runtime.shared.borrow_store(home)
        hub = Hub(runtime, store)
        pace = Pace()
        lives = [await hub.open(SessionOptions()) for _ in range(sessions)]
        tally = Tally()
        sinks = [Sink(tally) for _ in lives]
        writers = [await attach(live, sink) for live, sink in zip(lives, sinks, strict=True)]
        gc.collect()
        gc.freeze()
        per_delta: list[float] = []
        for _ in range(prompts):
            provider.add(*(reply(pace, chunks) for _ in lives))
            cpu = await one_prompt(lives, tally, pace, chunks)
            per_delta.append(cpu / (sessions * chunks) * 1e6)
        for writer in writers:
            writer.cancel()
        await hub.close_all()
        runtime.shared.give_back(store)
        await runtime.aclose()
    rounded = ", ".join(f"{us:.1f}" for us in per_delta)
    print(f"{sessions} sessions x {chunks} deltas: CPU per delta {rounded} us")
    print(f"median {statistics.median(per_delta):.1f} us per delta")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--prompts", type=int, default=3)
    args = parser.parse_args()
    try:  # the server runs on uvloop where it is installed
        import uvloop
    except ImportError:
        asyncio.run(main(args.sessions, args.chunks, args.prompts))
    else:
        uvloop.run(main(args.sessions, args.chunks, args.prompts))
