"""Informational (1xx) response heads: the one or two a real server sends before its answer
are skipped; a server that sends them without end, or too many bytes of them, is a protocol
error at once instead of keeping the request busy until its read timeout."""

from __future__ import annotations

import asyncio
import ssl
import time

import httpx
import pytest

from openheim.errors import ProviderError
from openheim.providers import http11
from openheim.providers.transport import AsyncioTransport
from tests.providers.support import drain, request
from tests.providers.transport_server import (
    OK,
    Server,
    client,
    keep_alive,
    openai_at,
    read_request,
)

__all__ = ["client"]  # the fixture, for the tests below

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
PROCESSING = b"HTTP/1.1 102 Processing\r\n\r\n"
GAP = 0.01
FOR = 20.0
"""The endless server sends an interim head every ``GAP`` seconds for at most ``FOR`` seconds
(longer than the clients' read timeouts), so a test without the bound ends too."""


def endless_interim(head: bytes = PROCESSING) -> Server:
    """A server answering a request with ``head`` again and again, never with a final head,
    until the client hangs up (or ``FOR`` seconds passed)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        hung_up = asyncio.ensure_future(reader.read())  # done once the client closes
        deadline = time.monotonic() + FOR
        try:
            while not hung_up.done() and time.monotonic() < deadline:
                writer.write(head)
                await writer.drain()
                await asyncio.sleep(GAP)
        except ConnectionError:
            return
        finally:
            hung_up.cancel()

    return Server(handler)


async def read_head_of(data: bytes) -> http11.ResponseHead:
    """``read_head`` of a stream that holds ``data`` and then ends."""
    reader = asyncio.StreamReader(limit=http11.PIECE)
    reader.feed_data(data)
    reader.feed_eof()
    return await http11.read_head(reader, "POST")


async def test_a_continue_and_early_hints_before_the_answer_still_work(
    client: httpx.AsyncClient,
) -> None:
    answer = CONTINUE + HINTS + OK
    async with Server(keep_alive([answer, answer])) as server:
        first = await client.post(server.url, json={"n": 1})
        second = await client.post(server.url, json={"n": 2})
    assert [(r.status_code, r.text) for r in (first, second)] == [(200, "ok"), (200, "ok")]
    assert server.connections == 1  # the stream stayed in step: the connection was reused


async def test_as_many_interim_heads_as_allowed_are_skipped() -> None:
    head = await read_head_of(HINTS * http11.MAX_INTERIM + OK)
    assert (head.status, head.length) == (200, 2)


async def test_one_interim_head_too_many_is_a_protocol_error() -> None:
    with pytest.raises(http11.ProtocolError) as caught:
        await read_head_of(HINTS * (http11.MAX_INTERIM + 1) + OK)
    assert str(caught.value) == (
        f"the server sent more than {http11.MAX_INTERIM} informational (1xx) responses "
        "before its answer: it is misbehaving"
    )


async def test_a_switch_of_protocols_no_request_asked_for_is_a_protocol_error() -> None:
    with pytest.raises(http11.ProtocolError) as caught:
        await read_head_of(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n" + OK)
    assert "switched protocols (101)" in str(caught.value)


async def test_interim_heads_larger_together_than_a_head_may_be_are_a_protocol_error() -> None:
    big = b"HTTP/1.1 103 Early Hints\r\nLink: " + b"x" * (http11.PIECE // 2) + b"\r\n\r\n"
    with pytest.raises(http11.ProtocolError) as caught:
        await read_head_of(big * 2 + OK)
    assert str(caught.value) == (
        f"the server's informational (1xx) responses are larger than {http11.PIECE} bytes "
        "together: it is misbehaving"
    )


async def test_endless_interim_heads_fail_the_request_at_once_not_at_the_timeout() -> None:
    transport = AsyncioTransport(ssl.create_default_context())
    async with (
        endless_interim() as server,
        httpx.AsyncClient(transport=transport, timeout=3) as client_3s,
    ):
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError, match="informational"):
            await client_3s.post(server.url, json={})
        took = time.monotonic() - started
    assert took < 1.5, f"the request failed only after {took:.1f} s"


async def test_a_provider_names_the_misbehaving_server() -> None:
    async with endless_interim(CONTINUE) as server:
        made = openai_at(server, 3.0)
        started = time.monotonic()
        try:
            with pytest.raises(ProviderError) as caught:
                await drain(made, request())
        finally:
            await made.aclose()
    assert time.monotonic() - started < 1.5
    message = str(caught.value)
    assert f"127.0.0.1:{server.port}" in message
    assert "informational (1xx) responses" in message and "misbehaving" in message
