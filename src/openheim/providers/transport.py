"""An HTTP/1.1 transport for ``httpx`` on asyncio's own streams, with ``h11`` as the parser.

httpx's default transport is httpcore, which on asyncio runs through anyio: importing and
starting those costs about a sixth of a one-shot ``openheim run``, for a client that speaks
HTTP/1.1 to one model API. This transport opens connections with ``asyncio.open_connection``
(TLS with the context it is given), frames requests and parses responses with ``h11`` (a
complete, strict HTTP/1.1 implementation), and keeps idle connections for reuse per origin.

Everything above the wire stays httpx's: redirects, cookies, content decoding, timeouts (read
from each request's ``timeout`` extension: connect, write, and read as the longest gap between
two reads) and the exception types, so callers see ``httpx.ConnectError``, ``ReadTimeout`` or
``RemoteProtocolError`` exactly as with the default transport. Requests that go through a proxy
never reach this transport: httpx mounts its own proxy transports for them.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator

import h11
import httpx

_READ_SIZE = 65536
_DEFAULT_PORTS = {"http": 80, "https": 443}
_Origin = tuple[str, str, int]


class _Connection:
    """One socket and its HTTP/1.1 state."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.state = h11.Connection(h11.CLIENT)

    def reusable(self) -> bool:
        """Still open: neither side has closed it since its last exchange."""
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class AsyncioTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams; ``ssl_context`` verifies every ``https`` origin."""

    def __init__(self, ssl_context: ssl.SSLContext, *, max_idle: int = 8) -> None:
        self._ssl = ssl_context
        self._max_idle = max_idle
        self._idle: dict[_Origin, list[_Connection]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        limits = request.extensions.get("timeout", {})
        origin = _origin(request.url)
        connection = self._take_idle(origin)
        if connection is None:
            try:
                async with asyncio.timeout(limits.get("connect")):
                    connection = await _connect(origin, self._ssl, request)
            except TimeoutError:
                raise httpx.ConnectTimeout("connecting timed out", request=request) from None
        exchange = _Exchange(connection, request, limits.get("read"), limits.get("write"))
        try:
            await exchange.send()
            head = await exchange.read_head()
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            head.status_code,
            headers=head.headers,
            stream=_Body(self, origin, exchange),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
        )

    def _take_idle(self, origin: _Origin) -> _Connection | None:
        pool = self._idle.get(origin, [])
        while pool:
            connection = pool.pop()
            if connection.reusable():
                return connection
            connection.close()
        return None

    def release(self, origin: _Origin, connection: _Connection) -> None:
        """A connection whose exchange finished: kept for the next request if both sides
        allow it, else closed."""
        state = connection.state
        if state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            pool = self._idle.setdefault(origin, [])
            if len(pool) < self._max_idle:
                pool.append(connection)
                return
        connection.close()

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for connection in pool:
                connection.close()
        self._idle.clear()


class _Exchange:
    """One request and its response on a connection; ``read_limit`` bounds each wait for
    data, ``write_limit`` each wait to send."""

    def __init__(
        self,
        connection: _Connection,
        request: httpx.Request,
        read_limit: float | None,
        write_limit: float | None,
    ) -> None:
        self.connection = connection
        self.request = request
        self.read_limit = read_limit
        self.write_limit = write_limit

    async def send(self) -> None:
        """The request line, headers and body, framed by h11 (chunked when httpx streams it)."""
        request, state = self.request, self.connection.state
        head = h11.Request(
            method=request.method, target=request.url.raw_path, headers=list(request.headers.raw)
        )
        try:
            await self._write(state.send(head))
            async for chunk in request.stream:  # type: ignore[union-attr]
                if chunk:
                    await self._write(state.send(h11.Data(data=chunk)))
            await self._write(state.send(h11.EndOfMessage()))
        except h11.LocalProtocolError as err:
            raise httpx.LocalProtocolError(str(err), request=request) from err

    async def _write(self, data: bytes | None) -> None:
        if not data:
            return
        writer = self.connection.writer
        writer.write(data)
        try:
            async with asyncio.timeout(self.write_limit):
                await writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("sending timed out", request=self.request) from None
        except OSError as err:
            raise httpx.WriteError(_text(err), request=self.request) from err

    async def read_head(self) -> h11.Response:
        """The final response head (informational ``1xx`` responses are skipped)."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Response):
                return event
            if not isinstance(event, h11.InformationalResponse):
                raise httpx.RemoteProtocolError(
                    "the server disconnected without sending a response", request=self.request
                )

    async def next_event(self) -> object:
        """The next parsed event (an ``h11`` event or ``h11.PAUSED``), reading from the socket
        as h11 needs it."""
        state = self.connection.state
        while True:
            try:
                event = state.next_event()
            except h11.RemoteProtocolError as err:
                raise httpx.RemoteProtocolError(str(err), request=self.request) from err
            if event is h11.NEED_DATA:
                state.receive_data(await self._read())
            else:
                return event

    async def _read(self) -> bytes:
        """The next bytes from the socket (b"" at its end).

        ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` drops a
        cancellation that arrives as its read completes, which would leave a cancelled call
        waiting on a stalled stream."""
        try:
            async with asyncio.timeout(self.read_limit):
                return await self.connection.reader.read(_READ_SIZE)
        except TimeoutError:
            raise httpx.ReadTimeout(
                "no data from the server in time", request=self.request
            ) from None
        except (OSError, ssl.SSLError) as err:
            raise httpx.ReadError(_text(err), request=self.request) from err


class _Body(httpx.AsyncByteStream):
    """A response body read as it arrives; the connection goes back to the pool once the
    whole message was read, and is closed if the reader stops early."""

    def __init__(self, transport: AsyncioTransport, origin: _Origin, exchange: _Exchange) -> None:
        self._transport = transport
        self._origin = origin
        self._exchange: _Exchange | None = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        exchange = self._exchange
        if exchange is None:
            return
        while True:
            event = await exchange.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._exchange = None
                self._transport.release(self._origin, exchange.connection)
                return
            else:
                raise httpx.RemoteProtocolError(
                    "the server closed the connection before the response ended",
                    request=exchange.request,
                )

    async def aclose(self) -> None:
        if self._exchange is not None:
            self._exchange.connection.close()
            self._exchange = None


def _origin(url: httpx.URL) -> _Origin:
    scheme = url.scheme
    if scheme not in _DEFAULT_PORTS:
        raise httpx.UnsupportedProtocol(f"the URL scheme {scheme!r} is not http or https")
    return scheme, url.host, url.port or _DEFAULT_PORTS[scheme]


def _text(err: BaseException) -> str:
    return str(err) or type(err).__name__


async def _connect(origin: _Origin, context: ssl.SSLContext, request: httpx.Request) -> _Connection:
    """A new connection to ``origin``, TLS-wrapped for ``https``."""
    scheme, host, port = origin
    tls = context if scheme == "https" else None
    try:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=tls, server_hostname=host if tls else None, limit=_READ_SIZE
        )
    except (OSError, ssl.SSLError) as err:
        raise httpx.ConnectError(_text(err), request=request) from err
    return _Connection(reader, writer)
