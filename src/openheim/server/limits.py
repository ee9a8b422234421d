"""Connection limits of ``openheim serve``, enforced on the socket before any request is parsed.

uvicorn reads a request head for as long as the client takes and accepts every connection, so a
few hundred sockets that never finish their head (or send it one byte at a time) used to hold
the server's file descriptors and lock everyone out. Here, per connection:

- its request head must be complete within ``header_timeout`` seconds of the connection (or of
  the previous response, on a kept-alive connection), and be at most ``MAX_HEAD_BYTES`` long
  (431); otherwise it is closed;
- one address may hold ``max_per_address`` connections at once (503 beyond);
- all addresses together ``max_connections``: at that limit a new connection takes the place of
  the oldest one still waiting for its head (a connection whose head is in, or a WebSocket, is
  never pushed out), and is answered 503 when there is none.

Idle kept-alive connections are closed by uvicorn after ``idle_timeout`` seconds. The counts
follow a connection through its WebSocket upgrade until the socket closes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

from openheim.config.schema import ServerEntry

MAX_HEAD_BYTES = 64 * 1024
"""The longest request head (request line and headers) read."""
_REASONS = {
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Limits:
    """The limits of one server (``[server]`` keys, defaults here)."""

    header_timeout: float = 10.0
    idle_timeout: float = 5.0
    max_connections: int = 1000
    max_per_address: int = 64


def limits_of(server: ServerEntry) -> Limits:
    """The limits ``[server]`` sets, the defaults for the keys it leaves out."""
    base = Limits()
    return Limits(
        header_timeout=server.header_timeout_secs or base.header_timeout,
        idle_timeout=server.idle_timeout_secs or base.idle_timeout,
        max_connections=server.max_connections or base.max_connections,
        max_per_address=server.max_connections_per_address or base.max_per_address,
    )


class Gate:
    """The open connections by peer address, and those still waiting for their head (oldest
    first), of one server. Keyed by transport, so a WebSocket that took over a connection's
    transport releases the same entry."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._hosts: dict[asyncio.BaseTransport, str] = {}
        self._per_host: dict[str, int] = {}
        self._waiting: dict[asyncio.BaseTransport, Callable[[], None]] = {}

    def admit(self, transport: asyncio.BaseTransport) -> str | None:
        """Count ``transport`` in; or the reason it may not be (then it is not counted)."""
        host = _host(transport)
        if self._per_host.get(host, 0) >= self.limits.max_per_address:
            return "too many connections from this address"
        if len(self._hosts) >= self.limits.max_connections and not self._push_out_oldest():
            return "too many connections"
        self._hosts[transport] = host
        self._per_host[host] = self._per_host.get(host, 0) + 1
        return None

    def wait_head(self, transport: asyncio.BaseTransport, close: Callable[[], None]) -> None:
        """``transport`` waits for a request head; ``close`` ends it if it must make room."""
        self._waiting.pop(transport, None)
        self._waiting[transport] = close

    def head_done(self, transport: asyncio.BaseTransport) -> None:
        self._waiting.pop(transport, None)

    def release(self, transport: asyncio.BaseTransport) -> None:
        """``transport`` closed (again: nothing happens)."""
        self._waiting.pop(transport, None)
        host = self._hosts.pop(transport, None)
        if host is None:
            return
        left = self._per_host[host] - 1
        if left:
            self._per_host[host] = left
        else:
            del self._per_host[host]

    def _push_out_oldest(self) -> bool:
        if not self._waiting:
            return False
        oldest, close = next(iter(self._waiting.items()))
        self.release(oldest)  # at once: its connection_lost comes later
        close()
        return True


def _host(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "local"


def protocols(gate: Gate) -> tuple[type[asyncio.Protocol], type[asyncio.Protocol]]:
    """uvicorn's HTTP and WebSocket protocol classes, held to ``gate``."""
    assert AutoWebSocketsProtocol is not None  # the server extra installs websockets
    ws_base: Any = AutoWebSocketsProtocol

    class GatedHttp(_GatedHttp):
        _gate = gate

    class GatedWebSocket(ws_base):  # type: ignore[misc]
        """Releases the connection's place when the WebSocket's socket closes."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._counted = transport
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            gate.release(self._counted)
            super().connection_lost(exc)

    return GatedHttp, GatedWebSocket


class _GatedHttp(HttpToolsProtocol):
    """uvicorn's HTTP protocol with the gate's limits; see the module docstring."""

    _gate: ClassVar[Gate]
    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        refusal = self._gate.admit(transport)
        if refusal is not None:
            self._refuse(503, refusal, "try again later")
            return
        self._wait_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self._gate.release(self.transport)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_timer is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        waiting = self._head_timer is not None and not self.transport.is_closing()
        if waiting and self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(431, "the request head is too large", "send smaller headers")

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        self._gate.head_done(self.transport)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # idle: the next head starts its clock
            self._wait_head()

    def _wait_head(self) -> None:
        self._stop_head_timer()
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self._gate.limits.header_timeout, self._close)
        self._gate.wait_head(self.transport, self._close)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _close(self) -> None:
        self._stop_head_timer()
        if not self.transport.is_closing():
            self.transport.close()

    def _refuse(self, status: int, error: str, hint: str) -> None:
        """Answer ``status`` with the JSON error body every route uses, and close."""
        self._stop_head_timer()
        body = json.dumps({"error": error, "hint": hint}).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()
