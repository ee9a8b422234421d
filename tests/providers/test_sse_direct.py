"""An event stream read straight from the transport's body: the same events, the connection
reused after ``[DONE]``, a stall still a timeout; other responses still read through httpx."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from openheim.errors import ProviderError
from openheim.events import TextDelta
from openheim.providers import create_provider
from openheim.providers.base import ProviderSettings
from openheim.providers.sse import Event, EventStream
from openheim.providers.transport import READ_BODY
from tests.providers.support import drain, request
from tests.providers.test_sse_stream import events
from tests.providers.transport_server import Server, read_request

STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def settings(port: int, timeout: float = 5.0) -> ProviderSettings:
    return ProviderSettings(
        name="raw",
        kind="openai_compatible",
        model="test-model",
        api_base=f"http://127.0.0.1:{port}/v1",
        timeout_secs=timeout,
    )


def one_chunk_per_event(body: bytes) -> bytes:
    frames = [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]
    return b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames) + b"0\r\n\r\n"


async def test_streams_read_past_httpx_reuse_their_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def untouched(self: httpx.Response, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        raise AssertionError("read through httpx")

    monkeypatch.setattr(httpx.Response, "aiter_raw", untouched)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for texts in (["a", "b"], ["c"]):
            await read_request(reader)
            writer.write(STREAM_HEAD + one_chunk_per_event(events(*texts)))
            await writer.drain()
        await read_request(reader)

    async with Server(handler) as server:
        provider = create_provider(settings(server.port))
        try:
            first, _ = await drain(provider, request())
            second, _ = await drain(provider, request())
        finally:
            await provider.aclose()
    assert (first, second) == ([TextDelta("a"), TextDelta("b")], [TextDelta("c")])
    assert server.connections == 1


async def test_a_stall_in_a_stream_read_past_httpx_is_a_timeout() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(STREAM_HEAD + one_chunk_per_event(events("a"))[:40])
        await writer.drain()
        await release.wait()

    async with Server(handler) as server:
        provider = create_provider(settings(server.port, timeout=0.2))
        try:
            with pytest.raises(ProviderError, match=r"(?i)timed out|no data"):
                await drain(provider, request())
        finally:
            release.set()
            await provider.aclose()


async def test_a_response_from_another_transport_is_read_through_httpx() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for piece in [b"data: one\n", b"", b"\ndata: two\n\n"]:
            yield piece

    response = httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=pieces(),
        request=httpx.Request("GET", "http://127.0.0.1:9/"),
    )
    assert READ_BODY not in response.extensions
    got = [event async for event in EventStream(response).events()]
    assert got == [Event("message", "one", ""), Event("message", "two", "")]
