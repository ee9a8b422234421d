"""The line transport under ``serve_acp``: whole lines whatever the reader's limit, and
JSON-RPC errors (not silence) for lines that are not one JSON-RPC object."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest

from openheim.acp import transport
from openheim.acp.transport import LineTransport


class Sink:
    """A StreamWriter stand-in that keeps what was written."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.data.decode().splitlines()]


def line_transport(data: bytes, limit: int = 16) -> tuple[LineTransport, Sink]:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    reader.feed_eof()
    sink = Sink()
    return LineTransport(reader, cast(asyncio.StreamWriter, sink)), sink


async def test_lines_longer_than_the_readers_limit_arrive_whole() -> None:
    message = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x" * 200}}
    lines, sink = line_transport(json.dumps(message).encode() + b"\n")
    assert await lines.receive() == message
    assert await lines.receive() is None
    assert sink.data == b""


async def test_bad_lines_are_answered_and_skipped() -> None:
    good = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}
    data = b"not json\n[1, 2]\n\n" + b'{"jsonrpc": "2.0", "id": 3, "method": 5}\n'
    lines, sink = line_transport(data + json.dumps(good).encode())  # no final newline
    assert await lines.receive() == good
    errors = [(m["id"], m["error"]["code"]) for m in sink.sent()]
    assert errors == [(None, -32700), (None, -32600), (3, -32600)]
    assert "not JSON" in sink.sent()[0]["error"]["data"]["details"]


async def test_an_oversized_line_is_refused_and_reading_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "MAX_LINE_BYTES", 100)
    good = {"jsonrpc": "2.0", "method": "x"}
    lines, sink = line_transport(b"y" * 500 + b"\n" + json.dumps(good).encode() + b"\n")
    assert await lines.receive() == good
    assert [m["error"]["code"] for m in sink.sent()] == [-32600]


async def test_sending_after_close_fails_clearly() -> None:
    lines, sink = line_transport(b"")
    await lines.send({"jsonrpc": "2.0", "method": "a"})
    await lines.close()
    with pytest.raises(ConnectionError, match="closed"):
        await lines.send({"jsonrpc": "2.0", "method": "b"})
    assert sink.closed and len(sink.sent()) == 1
