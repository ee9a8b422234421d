"""``openheim mcp serve --http``: the MCP server over streamable HTTP, behind a bearer token.

The token follows the rules of ``openheim serve`` (``openheim.serving.auth``):
``OPENHEIM_SERVER_TOKEN``, else ``[server] token_file``, else one generated at start, written
``0600`` to ``data_dir/server-token`` and printed once; a non-loopback address needs a given
token. Every HTTP request must carry ``Authorization: Bearer TOKEN``, compared in constant time;
any other request gets 401 before it reaches the MCP server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from openheim.runtime import Runtime
from openheim.serving.address import Address, bind
from openheim.serving.auth import TOKEN_FILE, Auth, load_auth

PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def bearer_only(app: App, auth: Auth) -> App:
    """``app`` behind the token: an HTTP request without it gets 401 and never reaches ``app``."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan messages
            await app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = given.partition(" ")
        if scheme.lower() == "bearer" and auth.check_token(token.strip()):
            await app(scope, receive, send)
            return
        body = json.dumps({"error": "missing or wrong bearer token"}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return guarded


async def serve_http(runtime: Runtime, host: str, port: int) -> None:
    """Serve the tools on ``http://HOST:PORT/mcp`` until SIGINT or SIGTERM."""
    import uvicorn

    from openheim.mcp_server.prompt import PromptRunner
    from openheim.mcp_server.server import build_server

    settings = runtime.settings
    address = Address(host, port)
    auth = load_auth(settings, public=not address.loopback)
    sock = bind(address)
    runner = PromptRunner(runtime)
    app = build_server(runtime, runner).streamable_http_app(streamable_http_path=PATH, host=host)
    if auth.generated:
        kept = settings.data_dir / TOKEN_FILE
        sys.stderr.write(f"token (kept in {kept}, mode 0600): {auth.token}\n")
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"openheim: MCP server on http://{shown}:{sock.getsockname()[1]}{PATH}\n")
    sys.stderr.flush()
    config = uvicorn.Config(bearer_only(app, auth), log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await runner.aclose()
