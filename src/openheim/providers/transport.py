"""An HTTP/1.1 transport for ``httpx`` on asyncio's own streams.

httpx's default transport is httpcore, which on asyncio runs through anyio and h11: importing
and starting those cost about a fifth of a one-shot ``openheim run``, for a client that speaks
HTTP/1.1 to one model API. This transport opens connections with ``asyncio.open_connection``
(TLS with the context it is given), frames messages with ``http11`` (strict about what a server
sends), and keeps idle connections for reuse per origin.

Everything above the wire stays httpx's: redirects, cookies, content decoding, timeouts (read
from each request's ``timeout`` extension: connect, write, and read as the longest gap between
two reads) and the exception types, so callers see ``httpx.ConnectError``, ``ReadTimeout`` or
``RemoteProtocolError`` exactly as with the default transport. Requests that go through a proxy
never reach this transport: httpx mounts its own proxy transports for them.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import httpx

from openheim.providers import http11
from openheim.providers.connection import Connection, Origin, connect

_T = TypeVar("_T")
MAX_IDLE = 1024
"""Idle connections kept per origin: as many as the streams a busy server runs at once, so that
each one's next request finds a connection instead of opening one (and closing another)."""
IDLE_EXPIRY = 30.0
"""Seconds an idle connection is kept for reuse (servers drop idle keep-alive connections)."""
_log = logging.getLogger(__name__)
_DEFAULT_PORTS = {"http": 80, "https": 443}
READ_BODY = "openheim.read_body"
"""The extension of a response from this transport that holds its body's ``read``: a
coroutine function returning the next bytes of the body, ``b""`` at its end."""


class AsyncioTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams; ``ssl_context`` verifies every ``https`` origin."""

    def __init__(
        self,
        ssl_context: ssl.SSLContext,
        *,
        max_idle: int = MAX_IDLE,
        idle_expiry: float = IDLE_EXPIRY,
    ) -> None:
        self._ssl = ssl_context
        self._max_idle = max_idle
        self._expiry = idle_expiry
        self._idle: dict[Origin, deque[tuple[float, Connection]]] = {}

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
        if _log.isEnabledFor(logging.DEBUG):  # as httpcore's debug log did (secrets redacted)
            _log.debug("%s %s: %s", request.method, request.url, _described(head))
        body = _Body(self, origin, exchange, head)
        return httpx.Response(
            head.status,
            headers=head.headers,
            stream=body,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": head.reason,
                READ_BODY: body.read,
            },
        )

    def _take_idle(self, origin: Origin) -> Connection | None:
        """The connection to ``origin`` that went idle last, if one is still open and fresh."""
        pool = self._idle.get(origin)
        fresh = time.monotonic() - self._expiry
        while pool:
            since, connection = pool.pop()
            if since >= fresh and connection.open():
                return connection
            connection.close()
        return None

    def release(self, origin: Origin, connection: Connection) -> None:
        """A connection whose exchange ended with the whole response read and keep-alive on
        both sides: kept for the next request (up to ``max_idle`` per origin, for at most
        ``idle_expiry`` seconds; the oldest are closed as the pool is used)."""
        pool = self._idle.setdefault(origin, deque())
        now = time.monotonic()
        while pool and (pool[0][0] < now - self._expiry or len(pool) >= self._max_idle):
            pool.popleft()[1].close()
        if self._max_idle > 0 and connection.open():
            pool.append((now, connection))
        else:
            connection.close()

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for _, connection in pool:
                connection.close()
        self._idle.clear()


class _Exchange:
    """One request and its response on a connection; ``read_limit`` bounds each wait for
    data, ``write_limit`` each wait to send."""

    def __init__(
        self,
        connection: Connection,
        request: httpx.Request,
        read_limit: float | None,
        write_limit: float | None,
    ) -> None:
        self.connection = connection
        self.request = request
        self.read_limit = read_limit
        self.write_limit = write_limit

    async def send(self) -> None:
        """The request line, headers and body (chunked when httpx streams it unsized); a
        body known whole goes in one write with the head."""
        request = self.request
        raw = list(request.headers.raw)
        streamed = any(k.lower() == b"transfer-encoding" for k, _ in raw)
        try:
            head = http11.request_head(request.method, request.url.raw_path, raw)
        except http11.ProtocolError as err:
            raise httpx.LocalProtocolError(str(err), request=request) from None
        if isinstance(request.stream, httpx.ByteStream) and not streamed:
            await self._write(b"".join([head, *request.stream]))
            return
        await self._write(head)
        async for chunk in request.stream:  # type: ignore[union-attr]
            if chunk:
                await self._write(http11.chunked(chunk) if streamed else chunk)
        if streamed:
            await self._write(http11.chunked(b""))

    async def _write(self, data: bytes) -> None:
        """Send ``data``; only a write the socket did not take whole waits (bounded by
        ``write_limit``) for it to drain."""
        writer = self.connection.writer
        writer.write(data)
        waits = writer.transport.get_write_buffer_size() > 0  # else drain cannot wait: no timer
        try:
            async with asyncio.timeout(self.write_limit if waits else None):
                await writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("sending timed out", request=self.request) from None
        except OSError as err:
            raise httpx.WriteError(_text(err), request=self.request) from err

    async def read_head(self) -> http11.ResponseHead:
        """The final response head."""
        return await self.bounded(http11.read_head(self.connection.reader, self.request.method))

    async def bounded(self, step: Awaitable[_T]) -> _T:
        """``step`` (a read), given ``read_limit`` seconds, its failures as httpx's errors.

        ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` drops a
        cancellation that arrives as its read completes, which would leave a cancelled call
        waiting on a stalled stream."""
        try:
            async with asyncio.timeout(self.read_limit):
                return await step
        except BaseException as err:
            self.fail(err, timed_out=isinstance(err, TimeoutError))
            raise

    def fail(self, err: BaseException, *, timed_out: bool) -> None:
        """Raise what a read's failure ``err`` is to httpx's callers (a timeout, or a protocol
        or transport error of httpx's); return for anything else (a cancellation, a bug), for
        the caller to re-raise."""
        if timed_out:
            raise httpx.ReadTimeout(
                "no data from the server in time", request=self.request
            ) from None
        if isinstance(err, http11.ProtocolError):
            raise httpx.RemoteProtocolError(str(err), request=self.request) from None
        if isinstance(err, OSError | ssl.SSLError):
            raise httpx.ReadError(_text(err), request=self.request) from err


class _Body(httpx.AsyncByteStream):
    """A response body read as it arrives; the connection goes back to the pool once the
    whole message was read on a keep-alive exchange, and is closed otherwise.

    ``read`` is the body's reader as a plain coroutine: the response carries it in its
    ``READ_BODY`` extension, so a reader on the hot path (``sse.EventStream``) awaits it
    straight from the socket instead of through httpx's generators (``__aiter__``, which
    httpx's ``aiter_raw`` drives, is a loop over it).

    A reader that stops at the end of the data it wanted (an SSE reader at ``[DONE]``) closes
    the body just before the message's own end (the last chunk): ``aclose`` then reads what
    is left, when that is little and arrives within ``_LINGER`` seconds, so the connection
    can still be reused instead of being closed after every streamed reply. A body whose
    read failed or was cancelled midway is never read on: its connection is closed."""

    def __init__(
        self,
        transport: AsyncioTransport,
        origin: Origin,
        exchange: _Exchange,
        head: http11.ResponseHead,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._exchange: _Exchange | None = exchange
        self._head = head
        self._body: http11.BodyReader | None = http11.BodyReader(exchange.connection.reader, head)
        self._idle = _IdleLimit(exchange.read_limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while piece := await self.read():
            yield piece

    async def read(self) -> bytes:
        """The body's next bytes, ``b""`` at its end (or once closed)."""
        exchange, body = self._exchange, self._body
        if exchange is None or body is None:
            return b""
        idle = self._idle
        idle.arm()
        try:
            piece = await body.read()
        except BaseException as err:  # failed or cancelled inside a read: the rest
            self._body = None  # is unknown
            idle.close()
            exchange.fail(err, timed_out=idle.timed_out(err))
            raise
        idle.waiting = False
        if not piece:
            self._end(exchange, reusable=self._head.keep_alive and not body.overread)
        return piece

    def _end(self, exchange: _Exchange, *, reusable: bool) -> None:
        self._exchange = None
        self._idle.close()
        if reusable:
            self._transport.release(self._origin, exchange.connection)
        else:
            exchange.connection.close()

    async def aclose(self) -> None:
        exchange, self._exchange = self._exchange, None  # a read meanwhile finds it ended
        if exchange is None:
            return
        body, reusable = self._body, False
        self._idle.close()
        try:
            reusable = body is not None and self._head.keep_alive and await _rest(body)
        finally:
            self._end(exchange, reusable=reusable)


class _IdleLimit:
    """``limit`` seconds for each wait for a body's next piece, kept with one timer for the
    whole body instead of an ``asyncio.timeout`` (a timer made and cancelled) per piece: each
    wait notes when it began, and the timer, when it fires, either moves on to the deadline of
    the wait in progress or, past it, cancels the reading task as ``asyncio.timeout`` would
    (``timed_out`` then takes that cancellation back as a timeout; one from elsewhere stays a
    cancellation). A streaming reply of thousands of pieces costs one timer per ``limit``."""

    __slots__ = ("cancelling", "fired", "handle", "limit", "loop", "since", "task", "waiting")

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[Any] | None = None
        self.since = 0.0
        self.waiting = False
        self.handle: asyncio.TimerHandle | None = None
        self.cancelling = 0
        self.fired = False

    def arm(self) -> None:
        """A wait begins."""
        if self.limit is None:
            return
        task = self.task = asyncio.current_task(self.loop)  # no running-loop lookup
        self.cancelling = task.cancelling() if task is not None else 0
        self.since = self.loop.time()
        self.waiting = True
        if self.handle is None:
            self.handle = self.loop.call_at(self.since + self.limit, self._check)

    def _check(self) -> None:
        self.handle = None
        if not self.waiting or self.task is None or self.limit is None:
            return  # the next wait arms a new timer
        due = self.since + self.limit
        if self.loop.time() < due:
            self.handle = self.loop.call_at(due, self._check)
            return
        self.fired = True
        self.task.cancel()

    def timed_out(self, err: BaseException) -> bool:
        """Whether ``err``, raised in a wait, is this limit's cancellation (taken back)."""
        if not self.fired or not isinstance(err, asyncio.CancelledError) or self.task is None:
            return False
        self.fired = False
        return self.task.uncancel() <= self.cancelling

    def close(self) -> None:
        self.waiting = False
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


_LINGER = 0.05
_LINGER_BYTES = 16 * 1024


async def _rest(body: http11.BodyReader) -> bool:
    """Read the rest of a body, if it ends within ``_LINGER`` seconds and ``_LINGER_BYTES``
    bytes; whether it did (a broken or slow rest just means the connection is not reused)."""
    left = _LINGER_BYTES
    try:
        async with asyncio.timeout(_LINGER):
            while piece := await body.read():
                left -= len(piece)
                if left < 0:
                    return False
    except (TimeoutError, OSError, ssl.SSLError, http11.ProtocolError):
        return False
    return not body.overread


def _origin(url: httpx.URL) -> Origin:
    scheme = url.scheme
    if scheme not in _DEFAULT_PORTS:
        raise httpx.UnsupportedProtocol(f"the URL scheme {scheme!r} is not http or https")
    return scheme, url.host, url.port or _DEFAULT_PORTS[scheme]


def _described(head: http11.ResponseHead) -> str:
    lines = [f"{head.status} {head.reason.decode('latin-1')}"]
    lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in head.headers]
    return "; ".join(lines)


def _text(err: BaseException) -> str:
    return str(err) or type(err).__name__


async def _connect(origin: Origin, context: ssl.SSLContext, request: httpx.Request) -> Connection:
    """A new connection to ``origin``, TLS-wrapped for ``https``."""
    try:
        return await connect(origin, context)
    except (OSError, ssl.SSLError) as err:
        raise httpx.ConnectError(_text(err), request=request) from err
