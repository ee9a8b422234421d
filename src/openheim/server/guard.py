"""The gate in front of every route: the token, the origin allow-list, CORS and body sizes.

An ASGI middleware, so it sees HTTP requests and WebSocket upgrades alike, before any route:

- a request whose ``Origin`` is neither the server's own nor on ``[server] allowed_origins``
  is refused (403; for a WebSocket, the upgrade is refused), so another web page the user
  visits cannot drive the server with the user's cookie. ``Origin: null`` (a sandboxed frame,
  a ``file:`` page, a redirect from elsewhere) is never allowed, listed or not: it names no
  one. The server's own pages send ``Referrer-Policy: same-origin``, so a browser names their
  origin on their own form posts and ``fetch`` calls (``no-referrer`` would make it send
  ``null``). A refused page (``/``, ``/login``) is answered with the login page and the reason,
  the API with JSON;
- a CORS preflight from an allowed origin is answered here; responses to allowed origins carry
  ``Access-Control-Allow-Origin``;
- every route but ``/login`` (and its script and favicon) and ``/healthz`` needs the token
  (``auth``): 401 for the API, a redirect to the login page for the page itself;
- a request body over the limit is refused with 413 before the route reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openheim.server.pages import PAGE_PATHS, login_page
from openheim.serving.auth import Auth

OPEN_PATHS = frozenset({"/login", "/login/", "/static/login.js", "/static/favicon.svg", "/healthz"})
"""Reachable without the token, each by its exact path: the login page, its script and the
favicon it shows in the tab, and the health check (``ok``)."""
CORS_METHODS = "GET, POST, DELETE, OPTIONS"
CORS_HEADERS = "Authorization, Content-Type"
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
"""On every answer: the page loads nothing from elsewhere and cannot be framed; the login
link's code never leaves for another site in a ``Referer``, while the page's own requests still
carry its ``Origin``."""
_LIMIT_HINT = "send a smaller body ([server] max_body_bytes)"
_ORIGIN_HINT = "add the origin to [server] allowed_origins"


@dataclass(frozen=True)
class Policy:
    """What the guard enforces: the token, the allowed origins, the largest request body."""

    auth: Auth
    allowed_origins: frozenset[str]
    max_body_bytes: int


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the last one of a repeated name)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def own_origins(headers: dict[str, str]) -> set[str]:
    """The origins the server itself is reached at: the ``Host`` header over http or https."""
    host = headers.get("host", "")
    return {f"http://{host}", f"https://{host}"} if host else set()


class Guard:
    """The ASGI middleware; see the module docstring."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _origin_ok(self, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if origin is None:
            return True
        if origin == "null":
            return False
        return origin in self.policy.allowed_origins or origin in own_origins(headers)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        protocols = list(scope.get("subprotocols") or [])
        if not self._origin_ok(headers) or not self.policy.auth.allows(headers, protocols):
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        origin = headers.get("origin")
        if not self._origin_ok(headers):
            await _refuse_origin(scope, send, origin or "")
            return
        allowed = origin is not None and origin in self.policy.allowed_origins
        if scope["method"] == "OPTIONS" and allowed:
            await _respond(send, 204, b"", _cors(origin or ""))
            return
        if scope["path"] not in OPEN_PATHS and not self.policy.auth.allows(headers, []):
            await _unauthorised(scope, send)
            return
        size = headers.get("content-length", "0")
        if not size.isdigit() or int(size) > self.policy.max_body_bytes:
            await _json(send, 413, "the request body is too large", _LIMIT_HINT)
            return
        extra = [*SECURITY_HEADERS, *(_cors(origin or "") if allowed else [])]
        exchange = _Exchange(receive, send, extra, self.policy.max_body_bytes)
        await self.app(scope, exchange.receive, exchange.send)


def _cors(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", CORS_METHODS.encode()),
        (b"access-control-allow-headers", CORS_HEADERS.encode()),
        (b"access-control-allow-credentials", b"true"),
        (b"vary", b"Origin"),
    ]


class _Exchange:
    """One request's ``receive`` and ``send`` as the route sees them: CORS headers added to
    the response, and a body that grows past the limit answered here with 413 (the route then
    sees a disconnect, and whatever it sends is dropped)."""

    def __init__(self, receive: Receive, send: Send, extra: list[tuple[bytes, bytes]], limit: int):
        self._receive = receive
        self._send = send
        self._extra = extra
        self._limit = limit
        self._seen = 0
        self._started = False
        self._refused = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._seen += len(message.get("body", b""))
            if self._seen > self._limit:
                if not self._started:
                    self._refused = True
                    await _json(self._send, 413, "the request body is too large", _LIMIT_HINT)
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: Message) -> None:
        if self._refused:
            return
        if message["type"] == "http.response.start":
            self._started = True
            message = {**message, "headers": [*message.get("headers", []), *self._extra]}
        await self._send(message)


async def _refuse_origin(scope: Scope, send: Send, origin: str) -> None:
    """403 for a request from another origin: a page for a browser at one of the server's
    pages (open the server's own address), JSON for the API (list the origin)."""
    if scope["path"] not in PAGE_PATHS:
        await _json(send, 403, "this origin may not use the server", _ORIGIN_HINT)
        return
    if origin == "null":
        reason = "The browser did not say which page sent this (Origin: null), so it was refused."
    else:
        reason = f"This came from another site ({origin}), so it was refused."
    message = f"{reason} Open the address openheim serve printed and log in there."
    page = [(b"content-type", b"text/html; charset=utf-8"), *SECURITY_HEADERS]
    await _respond(send, 403, login_page(message), page)


async def _unauthorised(scope: Scope, send: Send) -> None:
    if scope["method"] == "GET" and scope["path"] == "/":
        await _respond(send, 303, b"", [(b"location", b"/login")])
        return
    await _json(
        send,
        401,
        "missing or wrong token",
        "send `Authorization: Bearer TOKEN` (the token `openheim serve` printed or was given)",
    )


async def _json(send: Send, status: int, error: str, hint: str) -> None:
    body = json.dumps({"error": error, "hint": hint}).encode()
    await _respond(send, status, body, [(b"content-type", b"application/json")])


async def _respond(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]]
) -> None:
    start: dict[str, Any] = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-length", str(len(body)).encode()), *headers],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})
