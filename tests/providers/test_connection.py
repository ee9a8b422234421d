"""The transport's connections read into one receive buffer per thread: bodies larger than it,
on connections read at the same time, plain and over TLS, arrive byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from pathlib import Path

import httpx

from openheim.providers.connection import RECEIVE_BUFFER
from openheim.providers.transport import AsyncioTransport
from tests.providers.test_transport import certificate
from tests.providers.transport_server import Handler, Server, client, read_request

__all__ = ["certificate", "client"]  # the fixtures, for the tests below


def payload(seed: int, size: int) -> bytes:
    """``size`` bytes that differ from those of any other seed."""
    blocks = (hashlib.sha256(b"%d-%d" % (seed, n)).digest() for n in range(size // 32 + 1))
    return b"".join(blocks)[:size]


def sends(body: bytes, *, chunked: bool) -> Handler:
    """Answer one request with ``body`` in pieces of 50 KB, each drained before the next."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % len(body)
        writer.write(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n\r\n")
        for start in range(0, len(body), 50_000):
            piece = body[start : start + 50_000]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    return handler


async def test_bodies_read_at_once_on_two_connections_arrive_whole(
    client: httpx.AsyncClient,
) -> None:
    size = 5 * RECEIVE_BUFFER + 123
    bodies = [payload(1, size), payload(2, size)]
    async with (
        Server(sends(bodies[0], chunked=True)) as first,
        Server(sends(bodies[1], chunked=False)) as second,
    ):
        got = await asyncio.gather(client.get(first.url), client.get(second.url))
    assert [response.content for response in got] == bodies


async def test_a_large_body_over_tls_arrives_whole(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    body = payload(3, 3 * RECEIVE_BUFFER + 7)
    server = await asyncio.start_server(sends(body, chunked=True), "127.0.0.1", 0, ssl=server_side)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x"
    try:
        transport = AsyncioTransport(ssl.create_default_context(cafile=str(cert)))
        async with httpx.AsyncClient(transport=transport) as trusting:
            assert (await trusting.get(url)).content == body
    finally:
        server.close()
