"""``/ws`` against many clients that stop reading at once: the bytes queued for all of a
server's clients together stay within ``MAX_TOTAL_PENDING_BYTES`` (each client's own budget
alone let every new connection add its 64 MiB), the client holding the most cut first."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.types import Send
from starlette.websockets import WebSocket
from websockets.exceptions import ConnectionClosed

from openheim.server import ws as ws_module
from openheim.server.context import ServerContext
from openheim.testing import FakeLLMServer
from tests.server.support import Socket, served

BUDGET = 1024 * 1024
TOTAL = 2 * BUDGET
BIG = 60_000
CLIENTS = 4


class Counted(ws_module.Connection):
    """A connection that records, after each frame it queued, the bytes of text frames in
    the queues of every connection made (``peak``)."""

    made: list[Counted] = []
    peak = 0

    def __init__(self, websocket: WebSocket, context: ServerContext, send: Send | None) -> None:
        super().__init__(websocket, context, send)
        Counted.made.append(self)

    def _enqueue(self, text: str) -> None:
        super()._enqueue(text)
        queued = sum(
            len(item)
            for conn in Counted.made
            for item in conn.queue._items
            if isinstance(item, str)
        )
        Counted.peak = max(Counted.peak, queued)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[Counted]:
    monkeypatch.setattr(ws_module, "MAX_PENDING_BYTES", BUDGET)
    monkeypatch.setattr(ws_module, "MAX_TOTAL_PENDING_BYTES", TOTAL, raising=False)
    monkeypatch.setattr(ws_module, "Connection", Counted)
    monkeypatch.setattr(Counted, "made", [])
    monkeypatch.setattr(Counted, "peak", 0)
    return Counted


async def flood(sockets: list[Socket], rounds: int) -> int:
    """Ask every socket for the big file ``rounds`` times, reading nothing; the reads sent."""
    sent, open_ = 0, list(sockets)
    for _ in range(rounds):
        for ws in list(open_):
            try:
                await ws.send("fs", type="read", path="big.txt")
                sent += 1
            except ConnectionClosed:
                open_.remove(ws)
        await asyncio.sleep(0)  # a turn of this loop, where the server reads and answers
    return sent


async def test_clients_that_stop_reading_together_stay_within_the_servers_budget(
    home: Path, work: Path, counted: type[Counted]
) -> None:
    (work / "big.txt").write_text("x" * BIG)
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            sockets = [server.socket(max_queue=1, close_timeout=1) for _ in range(CLIENTS)]
            for ws in sockets:
                await ws.__aenter__()
            try:
                sent = await flood(sockets, 150)
                async with asyncio.timeout(10):
                    while not all(conn.overflowed for conn in counted.made):
                        await flood(sockets, 1)
            finally:
                for ws in sockets:
                    await ws.__aexit__(None, None, None)
            context = server.context
    assert sent * BIG > CLIENTS * BUDGET
    assert 0 < counted.peak <= TOTAL
    assert context.backlog.total == 0  # every client gone: nothing counted any more
