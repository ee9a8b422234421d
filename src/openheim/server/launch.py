"""Start ``openheim serve``: check the address, settle the token, bind, print, run uvicorn.

Loopback is the default. A non-loopback address needs an explicit token (a generated one would
be printed on a screen others may see) and is served with a warning that the traffic is plain
HTTP unless a TLS proxy stands in front.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import TextIO

from openheim.config.load import Settings
from openheim.server.collector import Collector
from openheim.server.context import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_FRAME,
    AcpBridge,
    ServerContext,
)
from openheim.server.guard import Policy
from openheim.server.limits import Limits
from openheim.serving.address import Address, bind
from openheim.serving.auth import TOKEN_FILE, Auth, load_auth

FILES_KEPT_FREE = 256
"""File descriptors left for everything but client connections: the store, MCP servers,
shell commands, model connections."""
WS_HARD_LIMIT_FACTOR = 4
"""uvicorn closes a connection whose frame passes this many times ``max_frame_bytes``; frames
between the two limits get an error reply and the connection stays open."""


def build(
    settings: Settings, *, public: bool, acp: AcpBridge | None = None, new_token: bool = False
) -> tuple[ServerContext, Policy]:
    """The server's shared state and guard policy for ``settings``; ``acp`` serves ``/acp``;
    ``new_token`` replaces the token kept in the data dir."""
    from openheim.runtime import Runtime
    from openheim.server.hub import Hub

    auth = load_auth(settings, public=public, new_token=new_token)
    runtime = Runtime(settings=settings)
    server = settings.server
    max_frame = server.max_frame_bytes or DEFAULT_MAX_FRAME
    store = runtime.shared.borrow_store(settings.data_dir, settings.store_url)  # the sessions' own
    if settings.store_url:  # a login link of this replica works through every replica
        from openheim.serving.login_codes import SharedLoginCodes

        auth.share_login_code(SharedLoginCodes(settings.store_url))
    if server.lease_timeout_secs is not None:  # every prompt of this server heartbeats to it
        store.lease_timeout = server.lease_timeout_secs
    context = ServerContext(
        runtime, store, auth, Hub(runtime, store), max_frame, collector=Collector(), acp=acp
    )
    max_body = server.max_body_bytes or DEFAULT_MAX_BODY
    policy = Policy(auth, frozenset(server.allowed_origins), max_body)
    return context, policy


def announce(auth: Auth, settings: Settings, address: Address, port: int, out: TextIO) -> None:
    """The page's URL with its one-time login link; a token generated now once, and where a
    kept one is (it is not printed again)."""
    host = f"[{address.host}]" if ":" in address.host else address.host
    base = f"http://{host}:{port}"
    out.write(f"openheim serve: {base}/\n")
    out.write(f"open this link once to log in: {base}/login?code={auth.login_code}\n")
    if auth.generated:
        out.write(f"token (kept in {settings.data_dir / TOKEN_FILE}, mode 0600): {auth.token}\n")
    elif auth.kept_in is not None:
        out.write(f"token: the one kept in {auth.kept_in} (--new-token makes a new one)\n")
    if not address.loopback:
        out.write(
            "warning: serving plain HTTP on a non-loopback address; put a TLS reverse proxy in "
            "front of it (see docs/server.md)\n"
        )
    out.flush()


def serve(
    settings: Settings,
    address: Address,
    out: TextIO = sys.stdout,
    *,
    acp: AcpBridge | None = None,
    new_token: bool = False,
) -> None:
    """Run the server until SIGINT/SIGTERM, with ``/acp`` served by ``acp`` if given;
    ``new_token`` replaces the token kept in the data dir (old login cookies are refused)."""
    import uvicorn

    from openheim.server.app import create_app
    from openheim.server.limits import Gate, limits_of, protocols

    context, policy = build(settings, public=not address.loopback, acp=acp, new_token=new_token)
    limits = fit_file_limit(limits_of(settings.server), sys.stderr)
    http, ws = protocols(Gate(limits))
    sock = bind(address)
    app = create_app(context, policy)
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=http,
        ws=ws,
        timeout_keep_alive=math.ceil(limits.idle_timeout),
        ws_max_size=context.max_frame_bytes * WS_HARD_LIMIT_FACTOR,
        ws_per_message_deflate=False,  # no compression oracle on secrets; less memory per socket
        proxy_headers=True,
        server_header=False,
    )
    announce(context.auth, settings, address, sock.getsockname()[1], out)
    uvicorn.Server(config).run(sockets=[sock])


def fit_file_limit(limits: Limits, err: TextIO) -> Limits:
    """``limits`` with room for its connections among the files the process may open: the
    soft limit is raised as far as the hard one allows, and ``max_connections`` lowered (with
    a warning) when that is still too few."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = limits.max_connections + FILES_KEPT_FREE
    ceiling = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if soft != resource.RLIM_INFINITY and soft < ceiling:
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        soft = ceiling
    room = need if soft == resource.RLIM_INFINITY else soft - FILES_KEPT_FREE
    if room >= limits.max_connections:
        return limits
    fitted = max(1, room)
    err.write(
        f"openheim: warning: max_connections lowered from {limits.max_connections} to "
        f"{fitted}: the process may open only {soft} files (raise `ulimit -n`)\n"
    )
    return dataclasses.replace(limits, max_connections=fitted)
