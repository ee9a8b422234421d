"""The transport's pool: when a connection is lent back for the next request and when it is
closed (a body not read to its end, a server's close, a cancelled read, bytes past a
response)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading

import httpx
import pytest

from openheim.providers.transport import AsyncioTransport
from tests.providers.transport_server import (
    OK,
    Handler,
    Server,
    client,
    idle_open,
    keep_alive,
    read_request,
)

__all__ = ["client"]


def streamed_then(rest: bytes, release: asyncio.Event | None = None) -> Handler:
    """Answer each request with a chunked ``data`` piece, then (after ``release``, when given)
    ``rest``: the rest of the body and its last chunk."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await read_request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\ndata\r\n")
            await writer.drain()
            if release is not None:
                await release.wait()
            writer.write(rest)
            await writer.drain()

    return handler


async def first_piece(client: httpx.AsyncClient, url: str) -> bytes:
    """The first piece of a streamed body; the response is closed right after it."""
    async with client.stream("GET", url) as response:
        async for piece in response.aiter_raw():
            return piece
    raise AssertionError("the body was empty")


async def test_a_reader_that_stops_before_the_last_chunk_leaves_the_connection(
    client: httpx.AsyncClient,
) -> None:
    async with Server(streamed_then(b"0\r\n\r\n")) as server:
        pieces = [await first_piece(client, server.url) for _ in range(3)]
    assert pieces == [b"data"] * 3
    assert server.connections == 1


async def test_a_body_whose_end_does_not_come_closes_its_connection(
    client: httpx.AsyncClient,
) -> None:
    release = asyncio.Event()
    async with Server(streamed_then(b"0\r\n\r\n", release)) as server:
        await first_piece(client, server.url)
        assert not idle_open(client)
        release.set()
        await first_piece(client, server.url)
    assert server.connections == 2


async def test_a_long_rest_of_a_body_is_not_read_to_keep_its_connection(
    client: httpx.AsyncClient,
) -> None:
    long_rest = b"%x\r\n%s\r\n0\r\n\r\n" % (64 * 1024, b"x" * 64 * 1024)
    release = asyncio.Event()
    async with Server(streamed_then(long_rest, release)) as server:
        async with client.stream("GET", server.url) as response:
            async for piece in response.aiter_raw():  # the rest is sent once this piece is in
                assert piece == b"data"
                release.set()
                break
        assert not idle_open(client)
        await first_piece(client, server.url)
    assert server.connections == 2


def answer_then_close(listener: socket.socket, count: int, closed: threading.Event) -> None:
    """On a thread: answer ``count`` connections one request each, closing each right after
    its answer, without ``Connection: close`` (as a server ending an idle keep-alive does)."""
    for _ in range(count):
        connection, _ = listener.accept()
        with connection:
            head = b""
            while b"\r\n\r\n" not in head:
                head += connection.recv(4096)
            connection.sendall(OK)
        closed.set()


async def test_a_connection_closed_before_the_loop_noticed_is_not_reused(
    client: httpx.AsyncClient,
) -> None:
    closed = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=answer_then_close, args=(listener, 2, closed))
        server.start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/x"
        first = await client.get(url)
        assert closed.wait(5)  # the loop does not run meanwhile: it has not seen the close
        second = await client.get(url)
        server.join(5)
    assert (first.text, second.text) == ("ok", "ok")
    assert not server.is_alive()


async def test_a_read_cancelled_midway_closes_its_connection(client: httpx.AsyncClient) -> None:
    release = asyncio.Event()
    async with Server(streamed_then(b"0\r\n\r\n", release)) as server:
        first = asyncio.Event()

        async def read_all() -> None:
            async with client.stream("GET", server.url) as response:
                async for _ in response.aiter_raw():
                    first.set()

        reading = asyncio.ensure_future(read_all())
        await asyncio.wait_for(first.wait(), 5)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert not idle_open(client)
        release.set()
        assert await first_piece(client, server.url) == b"data"
    assert server.connections == 2


CHUNKED_OK = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"


@pytest.mark.parametrize("answer", [OK, CHUNKED_OK], ids=["sized", "chunked"])
async def test_bytes_after_a_response_never_answer_the_next_request(
    client: httpx.AsyncClient, answer: bytes
) -> None:
    smuggled = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer + smuggled)  # one write: the tail lands in the client's buffer
        await writer.drain()
        await read_request(reader)
        writer.write(OK)
        await writer.drain()

    async with Server(handler) as server:
        first = await client.get(server.url)
        second = await client.get(server.url)
    assert (first.text, second.text) == ("ok", "ok")
    assert server.connections == 2  # the first connection was not lent again


async def test_the_pool_keeps_at_most_max_idle_and_none_past_its_expiry() -> None:
    transport = AsyncioTransport(ssl.create_default_context(), max_idle=2, idle_expiry=60.0)
    async with (
        httpx.AsyncClient(transport=transport) as client,
        Server(keep_alive([OK] * 4)) as server,
    ):
        streams = [client.stream("GET", server.url) for _ in range(3)]
        responses = [await stream.__aenter__() for stream in streams]  # three at once
        for stream, response in zip(streams, responses, strict=True):
            await response.aread()
            await stream.__aexit__(None, None, None)
        assert [len(pool) for pool in transport._idle.values()] == [2]
        transport._expiry = 0.0  # every idle connection is now past its expiry
        assert (await client.get(server.url)).text == "ok"
    assert server.connections == 4  # the expired ones were not reused


async def test_a_connection_numbered_past_select_s_limit_is_reused(
    client: httpx.AsyncClient,
) -> None:
    """A busy server holds more than 1,024 descriptors: a model connection numbered above
    ``select``'s limit is still checked and reused, not closed after each request."""
    held = [socket.socket() for _ in range(1100)]  # later descriptors are numbered above them
    try:
        async with Server(keep_alive([OK, OK, OK])) as server:
            replies = [await client.get(server.url) for _ in range(3)]
    finally:
        for sock in held:
            sock.close()
    assert [reply.status_code for reply in replies] == [200] * 3
    assert server.connections == 1


async def test_a_204_that_claims_a_chunked_body_has_none(client: httpx.AsyncClient) -> None:
    """A 204 (or 304, or a HEAD's answer) has no body whatever its headers say: reading it
    ends at once instead of waiting for chunks that never come."""
    empty = b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n"
    async with Server(keep_alive([empty, OK])) as server:
        async with asyncio.timeout(1.5):  # under the client's read limit of 2 s
            first = await client.post(server.url, content=b"{}")
            second = await client.get(server.url)
    assert (first.status_code, first.content) == (204, b"")
    assert (second.status_code, second.content) == (200, b"ok")
    assert server.connections == 1
