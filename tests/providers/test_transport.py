"""The asyncio HTTP/1.1 transport, against raw loopback servers that script each connection."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from openheim.providers.http_client import make_client
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

__all__ = ["client"]  # the fixture, for the tests below


async def test_a_connection_is_reused_for_the_next_request(client: httpx.AsyncClient) -> None:
    async with Server(keep_alive([OK, OK, OK])) as server:
        answers = [(await client.post(server.url, json={"n": n})).text for n in range(3)]
    assert answers == ["ok", "ok", "ok"]
    assert server.connections == 1


async def test_a_chunked_body_arrives_piece_by_piece(client: httpx.AsyncClient) -> None:
    sent = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await sent.wait()
        writer.write(b"6\r\nsecond\r\n0\r\n\r\n")
        await writer.drain()

    async with Server(handler) as server, client.stream("GET", server.url) as response:
        pieces = []
        async for piece in response.aiter_raw():
            pieces.append(piece)
            sent.set()
    assert pieces == [b"first", b"second"]


async def test_a_connection_the_server_closed_is_not_reused(client: httpx.AsyncClient) -> None:
    async with Server(keep_alive([OK])) as server:
        first = await client.get(server.url)
        for _ in range(200):  # until the loop has seen the server's close (bounded: 2 s)
            if not idle_open(client):
                break
            await asyncio.sleep(0.01)
        assert not idle_open(client)
        second = await client.get(server.url)
    assert (first.text, second.text) == ("ok", "ok")
    assert server.connections == 2


async def test_connection_close_is_honoured(client: httpx.AsyncClient) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    async with Server(keep_alive([closing])) as server:
        texts = [(await client.get(server.url)).text for _ in range(2)]
    assert texts == ["ok", "ok"]
    assert server.connections == 2


async def test_a_body_read_only_in_part_closes_the_connection(client: httpx.AsyncClient) -> None:
    partial = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345"
    server = Server(keep_alive([]))
    server.handler = lambda r, w: keep_alive([partial if server.connections == 1 else OK])(r, w)
    async with server:
        async with client.stream("GET", server.url) as response:
            async for _piece in response.aiter_raw():
                break
        second = await client.get(server.url)
    assert second.text == "ok"
    assert server.connections == 2


async def test_a_streamed_request_body_is_sent_chunked(client: httpx.AsyncClient) -> None:
    received: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.readuntil(b"0\r\n\r\n"))
        writer.write(OK)
        await writer.drain()

    async def body() -> AsyncIterator[bytes]:
        yield b"hello "
        yield b"world"

    async with Server(handler) as server:
        response = await client.post(server.url, content=body())
    assert response.text == "ok"
    assert b"transfer-encoding: chunked" in received[0].lower()
    assert b"6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n" in received[0]


async def test_a_whole_body_leaves_in_one_write_with_its_head(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[bytes] = []
    write = asyncio.StreamWriter.write

    def noted(writer: asyncio.StreamWriter, data: bytes | bytearray | memoryview) -> None:
        written.append(bytes(data))
        write(writer, data)

    monkeypatch.setattr(asyncio.StreamWriter, "write", noted)
    async with Server(keep_alive([OK])) as server:
        response = await client.post(server.url, json={"n": 1})
    assert response.text == "ok"
    client_writes = [data for data in written if data.startswith(b"POST ")]
    assert len(client_writes) == 1
    assert client_writes[0].endswith(b'\r\n\r\n{"n":1}')


async def test_an_informational_response_is_skipped(client: httpx.AsyncClient) -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" + OK
    async with Server(keep_alive([answer])) as server:
        response = await client.get(server.url)
    assert (response.status_code, response.text) == (200, "ok")


async def test_a_stalled_server_is_a_read_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()  # never answers; returns when the client gives up

    transport = AsyncioTransport(ssl.create_default_context())
    async with (
        Server(handler) as server,
        httpx.AsyncClient(transport=transport, timeout=0.2) as client,
    ):
        with pytest.raises(httpx.ReadTimeout):
            await client.get(server.url)


async def test_a_refused_connection_is_a_connect_error(client: httpx.AsyncClient) -> None:
    async with Server(keep_alive([])) as server:
        url = server.url
    with pytest.raises(httpx.ConnectError):
        await client.get(url)


BROKEN = {
    "garbage": b"NOT HTTP AT ALL\r\n\r\n",
    "cut-body": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    "no-response": b"",
    "cut-head": b"HTTP/1.1 200 OK\r\nContent-Le",
    "bad-header": b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    "folded-header": b"HTTP/1.1 200 OK\r\nA: b\r\n  folded\r\n\r\n",
    "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    "bad-length": b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
    "gzip-coding": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
    "bad-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n",
    "long-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nok\r\n0\r\n\r\n",
    "cut-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok",
    "huge-head": b"HTTP/1.1 200 OK\r\nA: " + b"x" * 70000 + b"\r\n\r\n",
    "chunked-and-length": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("reply", list(BROKEN.values()), ids=list(BROKEN))
async def test_a_broken_response_is_a_protocol_error(
    client: httpx.AsyncClient, reply: bytes
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(reply)
        await writer.drain()

    async with Server(handler) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(server.url)


async def test_cancelling_a_read_ends_the_call_at_once(client: httpx.AsyncClient) -> None:
    asked = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        asked.set()
        await reader.read()

    async with Server(handler) as server:
        call = asyncio.create_task(client.get(server.url))
        await asked.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, 2)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_https_is_verified_against_the_context(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    untrusting = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    server = await asyncio.start_server(keep_alive([OK]), "127.0.0.1", 0, ssl=server_side)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x"
    try:
        async with httpx.AsyncClient(transport=AsyncioTransport(trusting)) as good:
            assert (await good.get(url)).text == "ok"
        async with httpx.AsyncClient(transport=AsyncioTransport(untrusting)) as bad:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await bad.get(url)
    finally:
        server.close()


async def test_a_close_delimited_body_is_read_to_the_end(client: httpx.AsyncClient) -> None:
    reply = b"HTTP/1.1 200 OK\r\n\r\nall of it"
    async with Server(keep_alive([reply])) as server:
        first, second = (await client.get(server.url)).text, (await client.get(server.url)).text
    assert (first, second) == ("all of it", "all of it")
    assert server.connections == 2


async def test_no_body_is_read_after_head_or_204(client: httpx.AsyncClient) -> None:
    empty = b"HTTP/1.1 204 No Content\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    async with Server(keep_alive([empty, head, OK])) as server:
        answers = [await client.get(server.url), await client.head(server.url)]
        answers.append(await client.get(server.url))
    assert [(r.status_code, r.text) for r in answers] == [(204, ""), (200, ""), (200, "ok")]
    assert server.connections == 1


async def test_a_header_that_would_break_the_request_is_refused(
    client: httpx.AsyncClient,
) -> None:
    async with Server(keep_alive([OK])) as server:
        with pytest.raises(httpx.LocalProtocolError, match="forbidden character"):
            await client.get(server.url, headers={"X-Key": "a\r\nInjected: yes"})
    assert server.connections <= 1


async def test_a_proxy_in_the_environment_still_carries_the_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpx ignores the proxy variables once it is handed a transport, so with a proxy set the
    providers' client keeps httpx's own, which sends through the proxy."""
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(OK)
        await writer.drain()

    async with Server(proxy) as server:
        for name in (
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
            "NO_PROXY",
            "no_proxy",
        ):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
        async with make_client(5, "http://models.example.test/v1") as client:
            answer = await client.post("http://models.example.test/v1/chat", json={})
    assert answer.text == "ok"
    assert seen[0].startswith(b"POST http://models.example.test/v1/chat HTTP/1.1")


async def test_without_a_proxy_the_providers_client_uses_the_asyncio_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    async with make_client(5, "https://models.example.test/v1") as client:
        assert isinstance(client._transport, AsyncioTransport)


def _trickle(pieces: int, gap: float, then_stall: bool = False) -> Handler:
    """A chunked body of ``pieces`` pieces ``gap`` seconds apart; then its end, or nothing."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(pieces):
            writer.write(b"1\r\nx\r\n")
            await writer.drain()
            await asyncio.sleep(gap)
        if then_stall:
            await reader.read()
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    return handler


async def test_the_read_limit_is_per_wait_not_for_the_whole_body() -> None:
    transport = AsyncioTransport(ssl.create_default_context())
    async with (
        Server(_trickle(8, 0.05)) as server,  # 0.4 s in all, no gap near the 0.25 s limit
        httpx.AsyncClient(transport=transport, timeout=0.25) as client,
        client.stream("GET", server.url) as response,
    ):
        body = b"".join([piece async for piece in response.aiter_raw()])
    assert body == b"x" * 8


async def test_a_stall_after_some_pieces_is_a_read_timeout_and_a_cancel_stays_one() -> None:
    transport = AsyncioTransport(ssl.create_default_context())
    async with (
        Server(_trickle(2, 0.0, then_stall=True)) as server,
        httpx.AsyncClient(transport=transport, timeout=0.2) as client,
    ):
        async with client.stream("GET", server.url) as response:
            got: list[bytes] = []
            with pytest.raises(httpx.ReadTimeout):
                async for piece in response.aiter_raw():
                    got.append(piece)
        assert b"".join(got) == b"xx"

        async def read_all() -> None:
            async with client.stream("GET", server.url) as response:
                async for _ in response.aiter_raw():
                    pass

        reading = asyncio.create_task(read_all())
        await asyncio.sleep(0.05)  # inside the stalled wait, well before the limit
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
