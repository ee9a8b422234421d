"""A connection's frames sent at the end of the event loop's turn, without the writer, when
nothing waits before them: in order with the queued ones, a send that has to wait finished by
the writer, a failed send closing the connection's output, replays always queued."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from starlette.types import Message
from starlette.websockets import WebSocket

from openheim.server import ws as ws_module
from openheim.server.context import Backlog, ServerContext
from openheim.server.ws import Connection, Unfinished


class FakeAsgi:
    """The server's side of one WebSocket: records the frames sent (``calls`` counts the tries);
    a send may wait on ``gate`` or fail."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.gate: asyncio.Future[None] | None = None
        self.fail: Exception | None = None
        self.calls = 0

    async def receive(self) -> Message:
        return {"type": "websocket.connect"}

    async def send(self, message: Message) -> None:
        if message["type"] != "websocket.send":
            return
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        if self.gate is not None:
            await self.gate
        self.sent.append(message["text"])


async def connection(asgi: FakeAsgi, *, direct: bool = True) -> Connection:
    websocket = WebSocket({"type": "websocket", "path": "/ws"}, asgi.receive, asgi.send)
    await websocket.accept()
    context = cast(ServerContext, SimpleNamespace(backlog=Backlog()))
    return Connection(websocket, context, asgi.send if direct else None)


def frame(n: int) -> str:
    return f'{{"channel": "agent", "data": {{"n": {n}}}}}'


async def test_frames_with_nothing_queued_go_together_at_the_end_of_the_turn() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    conn.push('{"n": 1}')
    conn.push('{"n": 2}')
    assert asgi.sent == [] and len(conn.queue) == 0  # not yet: at the end of this turn
    await asyncio.sleep(0)
    assert asgi.sent == [frame(1), frame(2)] and len(conn.queue) == 0


async def test_a_frame_queued_after_ready_ones_goes_after_them() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    conn.push('{"n": 1}')
    conn.replay(['{"n": 2}'])
    conn.push('{"n": 3}')
    assert len(conn.queue) == 3  # the replay took the ready frame into the queue before it
    writer = asyncio.create_task(conn.writer())
    await asyncio.sleep(0)
    conn.queue.put(None)
    await asyncio.wait_for(writer, 5)
    assert asgi.sent == [frame(1), frame(2), frame(3)]


async def test_without_the_send_callable_every_frame_is_queued_for_the_writer() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi, direct=False)
    conn.push('{"n": 1}')
    assert asgi.sent == [] and len(conn.queue) == 1
    writer = asyncio.create_task(conn.writer())
    conn.queue.put(None)
    await asyncio.wait_for(writer, 5)
    assert asgi.sent == [frame(1)]


async def test_a_send_that_waits_is_finished_by_the_writer_before_later_frames() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    writer = asyncio.create_task(conn.writer())
    asgi.gate = asyncio.get_running_loop().create_future()
    conn.push('{"n": 1}')
    conn.push('{"n": 2}')
    await asyncio.sleep(0)
    assert asgi.sent == [] and len(conn.queue) == 2
    assert isinstance(conn.queue._items[0], Unfinished)
    asgi.gate.set_result(None)
    for _ in range(100):
        if len(asgi.sent) == 2:
            break
        await asyncio.sleep(0)
    assert asgi.sent == [frame(1), frame(2)]
    asgi.gate = None
    conn.push('{"n": 3}')  # the writer is idle again: sent at the end of the turn
    await asyncio.sleep(0)
    assert asgi.sent[-1] == frame(3) and len(conn.queue) == 0
    conn.queue.put(None)
    await asyncio.wait_for(writer, 5)


async def test_a_frame_made_while_the_writer_sends_waits_for_it() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    conn.replay(['{"n": 1}'])
    asgi.gate = asyncio.get_running_loop().create_future()
    writer = asyncio.create_task(conn.writer())
    for _ in range(100):
        if asgi.calls:
            break
        await asyncio.sleep(0)
    assert asgi.calls == 1 and len(conn.queue) == 0  # the writer is in the middle of frame 1
    conn.push('{"n": 2}')
    assert asgi.calls == 1 and len(conn.queue) == 1
    asgi.gate.set_result(None)
    asgi.gate = None
    for _ in range(100):
        if len(asgi.sent) == 2:
            break
        await asyncio.sleep(0)
    assert asgi.sent == [frame(1), frame(2)]
    conn.queue.put(None)
    await asyncio.wait_for(writer, 5)


async def test_a_writer_cancelled_mid_send_cancels_the_send() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    asgi.gate = asyncio.get_running_loop().create_future()
    conn.push('{"n": 1}')
    await asyncio.sleep(0)
    writer = asyncio.create_task(conn.writer())
    await asyncio.sleep(0)
    writer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(writer, 5)
    assert asgi.gate.cancelled() and asgi.sent == [] and conn.closed


async def test_a_failed_send_closes_the_output_and_later_frames_are_dropped() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    writer = asyncio.create_task(conn.writer())
    asgi.fail = OSError("the socket is gone")
    conn.push('{"n": 1}')
    await asyncio.sleep(0)
    assert conn.closed
    asgi.fail = None
    conn.push('{"n": 2}')
    conn.send("system", {"type": "pong"})
    await asyncio.wait_for(writer, 5)
    assert asgi.sent == [] and asgi.calls == 1 and len(conn.queue) == 0


async def test_after_a_close_frames_go_through_starlette_and_its_check() -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    await conn.websocket.close()
    conn.push('{"n": 1}')
    assert asgi.sent == [] and len(conn.queue) == 1
    with pytest.raises(RuntimeError, match="close message"):
        await asyncio.wait_for(conn.writer(), 5)
    assert conn.closed


async def test_a_replay_is_queued_whole_and_a_long_one_overflows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    conn.replay(['{"n": 1}', '{"n": 2}'])
    assert asgi.sent == [] and len(conn.queue) == 2
    monkeypatch.setattr(ws_module, "MAX_PENDING", 3)
    conn.replay([f'{{"n": {n}}}' for n in range(3, 6)])
    assert conn.overflowed
    assert conn._closer is not None
    await asyncio.wait_for(conn._closer, 5)
    conn.push('{"n": 9}')
    assert asgi.sent == []


async def test_queued_bytes_are_counted_until_sent_and_too_many_overflow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asgi = FakeAsgi()
    conn = await connection(asgi)
    conn.replay(['{"n": 1}', '{"n": 22}'])
    assert conn.queued_bytes == len(frame(1)) + len(frame(22))
    writer = asyncio.create_task(conn.writer())
    for _ in range(100):
        if len(asgi.sent) == 2:
            break
        await asyncio.sleep(0)
    assert asgi.sent == [frame(1), frame(22)] and conn.queued_bytes == 0
    monkeypatch.setattr(ws_module, "MAX_PENDING_BYTES", 2 * len(frame(3)))
    conn.replay(['{"n": 3}', '{"n": 4}'])
    assert conn.queued_bytes == 2 * len(frame(3))  # at the budget, not over it: still queued
    conn.replay(['{"n": 5}'])
    assert conn.overflowed and conn.queued_bytes == 0
    assert conn._closer is not None
    await asyncio.wait_for(conn._closer, 5)
    await asyncio.wait_for(writer, 5)  # the dropped frames are never sent
    assert asgi.sent == [frame(1), frame(22)]


async def test_an_unfinished_send_passes_a_thrown_error_into_the_send() -> None:
    seen: list[str] = []

    async def send() -> str:
        try:
            await asyncio.get_running_loop().create_future()
        except ValueError as err:
            seen.append(str(err))
            return "handled"
        return "not reached"

    steps: Any = send().__await__()
    waiting = steps.send(None)
    task = asyncio.ensure_future(_await(Unfinished(steps, waiting)))
    await asyncio.sleep(0)
    assert not task.done()
    waiting.set_exception(ValueError("thrown"))
    await asyncio.wait_for(task, 5)
    assert seen == ["thrown"]


async def _await(unfinished: Unfinished) -> None:
    await unfinished
