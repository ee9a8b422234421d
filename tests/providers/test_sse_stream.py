"""Event streams through a provider from raw loopback servers: odd framing, compression, bad
bytes."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import Callable

import pytest

from openheim.errors import ProviderProtocolError
from openheim.events import TextDelta
from openheim.messages import TextBlock
from tests.providers.support import API_KEY, drain, request
from tests.providers.transport_server import Handler, Server, openai_at, read_request

Compress = Callable[[bytes], bytes]


def events(*texts: str, end: str = "\n") -> bytes:
    """An OpenAI stream: one chunk per text, a finish reason, ``[DONE]``."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in texts]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines = [f"data: {json.dumps(c, ensure_ascii=False)}{end}{end}" for c in chunks]
    return ("".join(lines) + f"data: [DONE]{end}{end}").encode()


def answer(
    body: bytes, *, encoding: str | None = None, pieces: int = 1, heads: list[bytes] | None = None
) -> Handler:
    """Answer one request with ``body`` as an event stream, chunked into ``pieces`` writes;
    the request's head goes to ``heads``."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_request(reader)
        if heads is not None:
            heads.append(head)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        if encoding:
            head += b"Content-Encoding: " + encoding.encode() + b"\r\n"
        writer.write(head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        size = -(-len(body) // pieces)
        for start in range(0, len(body), size):
            piece = body[start : start + size]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    return handler


async def stream_from(server: Server) -> tuple[list[object], object]:
    async with server:
        provider = openai_at(server, 5.0)
        try:
            deltas, response = await drain(provider, request())
        finally:
            await provider.aclose()
    return list(deltas), response.message.content


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("pieces", [1, 7, 1000])
async def test_any_line_ending_and_any_chunking_give_the_same_deltas(end: str, pieces: int) -> None:
    body = events("Hé", "llo ", "🙂", end=end)
    deltas, content = await stream_from(Server(answer(body, pieces=pieces)))
    assert deltas == [TextDelta("Hé"), TextDelta("llo "), TextDelta("🙂")]
    assert content == (TextBlock("Héllo 🙂"),)


async def test_a_stream_is_asked_for_uncompressed() -> None:
    heads: list[bytes] = []
    await stream_from(Server(answer(events("x"), heads=heads)))
    lines = heads[0].lower().split(b"\r\n")
    assert b"accept-encoding: identity" in lines
    assert b"accept: text/event-stream" in lines


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("GZIP", gzip.compress)],
)
async def test_a_compressed_stream_is_still_read(encoding: str, compress: Compress) -> None:
    body = compress(events("com", "pressed"))
    deltas, content = await stream_from(Server(answer(body, encoding=encoding, pieces=5)))
    assert deltas == [TextDelta("com"), TextDelta("pressed")]
    assert content == (TextBlock("compressed"),)


async def test_bytes_that_are_not_utf8_are_a_clear_protocol_error() -> None:
    body = b"data: \xff\xfe\n\n" + events("fine")
    with pytest.raises(ProviderProtocolError) as caught:
        await stream_from(Server(answer(body)))
    message = str(caught.value)
    assert "sent a malformed event stream: the event stream is not valid UTF-8" in message
    assert "/v1/chat/completions" in message and API_KEY not in message
    assert caught.value.hint is not None and "check api_base" in caught.value.hint
