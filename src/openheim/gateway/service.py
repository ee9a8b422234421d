"""``openheim gateway`` running: the platforms' clients, the pipeline between them and the
runtime, and the webhook app for the platforms that push (served by uvicorn, on loopback
unless configured otherwise), until cancelled."""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.config.schema import GatewayEntry
from openheim.errors import ConfigError, OpenheimError
from openheim.gateway.auth import Authoriser
from openheim.gateway.inbound import Platform
from openheim.gateway.leader import DEFAULT_LEASE, Leadership
from openheim.gateway.pipeline import AgentChoice, Gateway
from openheim.gateway.ratelimit import RateLimiter
from openheim.gateway.setup import (
    DEFAULT_QUEUE,
    DEFAULT_RATE_LIMIT,
    DEFAULT_RATE_WINDOW,
    allowed_users,
    build_platform,
    read_secret,
    session_settings,
)
from openheim.gateway.state import GatewayState, open_state
from openheim.runtime import Runtime, models

log = logging.getLogger(__name__)

DEFAULT_WEBHOOK_HOST = "127.0.0.1"
DEFAULT_WEBHOOK_PORT = 8090


def build_gateway(
    settings: Settings,
    platforms: Mapping[str, Platform],
    state: GatewayState,
    env: Mapping[str, str],
) -> Gateway:
    """The pipeline over the gateway's own session settings (its provider checked now, so a
    wrong one stops the command instead of failing every turn)."""
    entry = settings.gateway
    sessions = session_settings(settings)
    chosen = resolve_provider(sessions)
    models.check_offered(sessions, chosen.name, chosen.model, list(entry.models), "gateway.models")
    named = entry.passphrase is not None  # a passphrase named but empty is a mistake
    passphrase = read_secret(entry.passphrase, "passphrase", env, required=named) or None
    auth = Authoriser(allowed_users(entry), passphrase, state)
    limiter = RateLimiter(
        state, entry.rate_limit or DEFAULT_RATE_LIMIT, entry.rate_window_secs or DEFAULT_RATE_WINDOW
    )
    return Gateway(
        Runtime(settings=sessions),
        state,
        auth,
        limiter,
        platforms,
        choice=AgentChoice(entry.agent, tuple(entry.models)),
        queue=DEFAULT_QUEUE if entry.queue is None else entry.queue,
    )


async def serve(
    settings: Settings,
    names: Sequence[str],
    env: Mapping[str, str],
    *,
    webhook_socket: socket.socket | None = None,
    ready: asyncio.Event | None = None,
) -> None:
    """Serve the platforms ``names`` until cancelled; a platform that refuses the gateway (a
    bad token) ends it with that ``PlatformError``, a failing database with its error."""
    state = await asyncio.to_thread(open_state, settings.data_dir, settings.store_url)
    platforms: dict[str, Platform] = {}
    try:
        for name in names:
            platforms[name] = build_platform(name, settings, state, env)
        gateway = build_gateway(settings, platforms, state, env)
        routes = [r for p in platforms.values() for r in p.webhook_routes(gateway.deliver)]
        if routes and webhook_socket is None:
            webhook_socket = listen(settings.gateway)
        try:
            lease = settings.gateway.leader_lease_secs or DEFAULT_LEASE
            leaders = {n: Leadership(state, n, p.bot_id, lease) for n, p in platforms.items()}
            await _run(gateway, leaders, platforms, (routes, webhook_socket), ready)
        finally:
            await gateway.aclose()
            if webhook_socket is not None:
                webhook_socket.close()
    finally:
        for platform in platforms.values():
            await platform.aclose()
        await asyncio.to_thread(state.close)


def listen(entry: GatewayEntry) -> socket.socket:
    """The webhook app's socket, bound to ``webhook_host:webhook_port`` (default loopback)."""
    host = entry.webhook_host or DEFAULT_WEBHOOK_HOST
    port = DEFAULT_WEBHOOK_PORT if entry.webhook_port is None else entry.webhook_port
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as err:
        raise ConfigError(
            f"the webhook app cannot listen on {host}:{port} ({err.strerror or err})",
            hint="set gateway.webhook_host and gateway.webhook_port to a free address",
        ) from None
    return sock


async def _run(
    gateway: Gateway,
    leaders: Mapping[str, Leadership],
    platforms: Mapping[str, Platform],
    webhooks: tuple[list[Any], socket.socket | None],
    ready: asyncio.Event | None,
) -> None:
    routes, sock = webhooks
    try:
        async with asyncio.TaskGroup() as group:
            if routes and sock is not None:
                from openheim.gateway.webhooks import serve_webhooks

                group.create_task(serve_webhooks(routes, sock))
            for name, platform in platforms.items():
                group.create_task(
                    leaders[name].run(
                        functools.partial(platform.receive, gateway.deliver),
                        functools.partial(_resume, gateway, name),
                    )
                )
            group.create_task(asyncio.Event().wait())  # runs until cancelled
            log.info("gateway: serving %s", ", ".join(platforms))
            if ready is not None:
                ready.set()
    except* OpenheimError as group_error:
        raise group_error.exceptions[0] from None


async def _resume(gateway: Gateway, name: str) -> None:
    """Handle the messages of ``name`` stored but left unanswered (by this gateway's last run,
    or by the replica that led before)."""
    if count := await gateway.resume(name):
        log.info("%s: %d message(s) left unanswered last time, handling them", name, count)
