"""Raw loopback servers that script each connection, for the transport's tests."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from openheim.providers.transport import AsyncioTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class Server:
    """A loopback TCP server running ``handler`` for each connection, counting connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        finally:
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/x"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head (and a Content-Length body), or b"" when the client closed."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            head += await reader.readexactly(int(line.split(b":")[1]))
    return head


def keep_alive(responses: list[bytes]) -> Handler:
    """Answer requests on one connection with ``responses`` in turn."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for response in responses:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(response)
            await writer.drain()

    return handler


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = AsyncioTransport(ssl.create_default_context())
    async with httpx.AsyncClient(transport=transport, timeout=2) as client:
        yield client


def idle_open(client: httpx.AsyncClient) -> bool:
    """Whether the client's transport holds an open idle connection."""
    transport = client._transport
    assert isinstance(transport, AsyncioTransport)
    return any(c.open() for pool in transport._idle.values() for _, c in pool)
