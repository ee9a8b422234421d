"""Bad frames on ``/ws``: each gets an ``error`` on the ``system`` channel and the connection
stays open."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer
from tests.server.support import served

BAD = {
    "not json": ("{nope", "not JSON"),
    "an array": ("[1, 2]", "not a JSON object"),
    "no channel": ('{"data": {}}', "unknown channel"),
    "unknown channel": ('{"channel": "video", "data": {}}', "unknown channel"),
    "data not an object": ('{"channel": "agent", "data": 3}', "data is not an object"),
    "oversized": ('{"channel": "system", "data": {"pad": "' + "x" * 70_000 + '"}}', "over"),
    "binary": (b"\x00\x01", "binary frames"),
}


@pytest.mark.parametrize("frame", BAD.values(), ids=BAD.keys())
async def test_a_bad_frame_is_answered_and_the_socket_stays(
    home: Path, work: Path, frame: tuple[str | bytes, str]
) -> None:
    text, expected = frame
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_frame=64 * 1024) as server, server.socket() as ws:
            await ws.raw(text)
            error = await ws.next()
            pong = await ws.call("system", type="ping")
    assert error["channel"] == "system" and error["data"]["type"] == "error"
    assert expected in error["data"]["message"] and error["data"]["hint"]
    assert pong == {"type": "pong", "id": pong["id"]}


async def test_unknown_system_requests_are_refused(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            reply = await ws.call("system", type="reboot")
    assert reply["type"] == "error" and "ping" in reply["hint"]


async def test_a_frame_far_over_the_limit_closes_the_socket(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_frame=4096) as server, server.socket() as ws:
            await ws.raw("x" * 4096 * 5)
            assert ws.conn is not None
            await ws.conn.wait_closed()
            assert ws.conn.close_code == 1009
