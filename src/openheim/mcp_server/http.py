"""``openheim mcp serve --http``: the MCP server over streamable HTTP, behind a bearer token.

The token is ``OPENHEIM_SERVER_TOKEN`` when set, else the one stored in ``data_dir/server_token``
(made on first use: 32 random bytes, written ``0600`` and printed once on stderr). A stored
token file that is a symlink, is not the user's own, or is readable by others is refused, not
used. Every HTTP request must carry ``Authorization: Bearer TOKEN``, compared in constant time;
any other request gets 401 before it reaches the MCP server.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import stat
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from openheim.errors import ConfigError
from openheim.runtime import Runtime

TOKEN_ENV = "OPENHEIM_SERVER_TOKEN"
TOKEN_FILE = "server_token"
PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def server_token(data_dir: Path) -> str:
    """The bearer token: the environment's, the stored one, or a new one (stored and printed)."""
    if token := os.environ.get(TOKEN_ENV, "").strip():
        return token
    path = data_dir / TOKEN_FILE
    try:
        return _read_token(path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    sys.stderr.write(f"openheim: new bearer token (stored in {path}, shown once): {token}\n")
    return token


def _read_token(path: Path) -> str:
    """The stored token, refused unless it is the user's own regular file, private to them."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # a symlink raises ELOOP: refused below
    with os.fdopen(fd) as fh:
        info = os.fstat(fh.fileno())
        private = stat.S_IMODE(info.st_mode) & 0o077 == 0
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or not private:
            raise ConfigError(
                f"the token file {path} must be your own regular file, readable by you only",
                hint=f"run `chmod 600 {path}`, or delete it to make a new token",
            )
        token = fh.read().strip()
    if not token:
        raise ConfigError(f"the token file {path} is empty", hint="delete it to make a new one")
    return token


def bearer_only(app: App, token: str) -> App:
    """``app`` behind the token: an HTTP request without it gets 401 and never reaches ``app``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, expected):
            await app(scope, receive, send)
            return
        body = json.dumps({"error": "missing or wrong bearer token"}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return guarded


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` and ``port`` (0: any free port)."""
    try:
        sock = socket.create_server((host, port), family=_family(host))
    except OSError as err:
        raise ConfigError(
            f"cannot listen on {host}:{port}: {err.strerror}",
            hint="pick another --port, or a --host this machine has",
        ) from None
    return sock


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


async def serve_http(runtime: Runtime, host: str, port: int) -> None:
    """Serve the tools on ``http://HOST:PORT/mcp`` until interrupted."""
    import uvicorn

    from openheim.mcp_server.server import build_server

    token = server_token(runtime.settings.data_dir)
    sock = listen(host, port)
    app = build_server(runtime).streamable_http_app(streamable_http_path=PATH, host=host)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"openheim: MCP server on http://{shown}:{bound}{PATH}\n")
    sys.stderr.flush()
    config = uvicorn.Config(bearer_only(app, token), log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
