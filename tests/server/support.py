"""A real ``openheim serve`` app on uvicorn on a loopback port, against ``FakeLLMServer``, and a
WebSocket client that speaks its ``{channel, data}`` frames."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from openheim.acp.websocket import serve_websocket
from openheim.config.load import Overrides, load_settings
from openheim.server.app import create_app
from openheim.server.context import AcpBridge, ServerContext
from openheim.server.guard import Policy
from openheim.server.hub import Hub
from openheim.serving.auth import Auth
from openheim.testing import FakeLLMServer

TOKEN = "test-token-0123456789abcdef"
WAIT = 10.0


@dataclass
class Served:
    """A running server: its base URL, its state, and the fake model behind it."""

    url: str
    context: ServerContext
    llm: FakeLLMServer
    work: Path

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"

    def client(self, token: str | None = TOKEN) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=WAIT)

    def socket(
        self, token: str | None = TOKEN, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> Socket:
        """A ``/ws`` client; ``kwargs`` go to ``websockets``' ``connect``."""
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        return Socket(self.ws_url, {**auth, **(headers or {})}, kwargs)


class Endpoint(Protocol):
    """Where a model answers: a ``FakeLLMServer`` here, or one in a process of its own."""

    @property
    def base_url(self) -> str: ...


def write_config(
    home: Path,
    llm: Endpoint,
    extra: str = "",
    provider: str = "",
    models: tuple[str, ...] = ("fake-model", "fake-small"),
) -> None:
    """A config for the fake model offering ``models``; ``extra`` goes at the top,
    ``provider`` in its table."""
    listed = ", ".join(f'"{model}"' for model in models)
    (home / "config.toml").write_text(
        f'default_provider = "fake"\n{extra}\n[providers.fake]\napi_base = "{llm.base_url}"\n'
        f'default_model = "fake-model"\nmodels = [{listed}]\n{provider}\n'
    )


@contextlib.asynccontextmanager
async def served(
    home: Path,
    work: Path,
    llm: FakeLLMServer,
    *,
    extra: str = "",
    provider: str = "",
    origins: tuple[str, ...] = (),
    max_body: int = 1024 * 1024,
    max_frame: int = 64 * 1024,
    acp: AcpBridge | None = serve_websocket,
    models: tuple[str, ...] = ("fake-model", "fake-small"),
) -> AsyncIterator[Served]:
    """The app on uvicorn in this event loop, on 127.0.0.1 and a free port; ``acp`` serves
    ``/acp`` as ``openheim serve`` composes it (None: an app without ``/acp``)."""
    write_config(home, llm, extra, provider, models)
    settings = load_settings(
        Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)}
    )
    from openheim.runtime import Runtime

    runtime = Runtime(settings=settings)
    auth = Auth(TOKEN, generated=False)
    store = runtime.shared.borrow_store(settings.data_dir, settings.store_url)
    hub = Hub(runtime, store)
    context = ServerContext(runtime, store, auth, hub, max_frame, acp=acp)
    app = create_app(context, Policy(auth, frozenset(origins), max_body))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws_max_size=max_frame * 4,
        ws_per_message_deflate=False,
        timeout_graceful_shutdown=SHUTDOWN,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await asyncio.wait_for(_started(server), WAIT)
        yield Served(f"http://127.0.0.1:{port}", context, llm, work)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


SHUTDOWN = 5
"""Seconds the server waits at the end for its connections to close: a browser page a test left
open (busy machine, its socket's closing handshake not answered yet) is then cut, well within
the ``WAIT`` (10 s) the test gives the server to stop."""


async def _started(server: uvicorn.Server) -> None:
    while not server.started:
        await asyncio.sleep(0.01)


class Socket:
    """A ``/ws`` client: send requests, wait for the frame that matches."""

    def __init__(self, url: str, headers: dict[str, str], kwargs: dict[str, Any]) -> None:
        self.url = url
        self.headers = headers
        self.kwargs = kwargs
        self.conn: ClientConnection | None = None
        self.seen: list[dict[str, Any]] = []
        self._ids = 0

    async def __aenter__(self) -> Socket:
        self.conn = await connect(self.url, additional_headers=self.headers, **self.kwargs)
        hello = await self.next()
        assert hello == {"channel": "system", "data": hello["data"]}
        assert hello["data"]["type"] == "connected"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.conn is not None:
            await self.conn.close()

    async def raw(self, text: str | bytes) -> None:
        assert self.conn is not None
        await self.conn.send(text)

    async def send(self, channel: str, **data: Any) -> str:
        """Send a request with a fresh ``id`` and return the id."""
        self._ids += 1
        rid = f"r{self._ids}"
        await self.raw(json.dumps({"channel": channel, "data": {**data, "id": rid}}))
        return rid

    async def next(self, wait: float = WAIT) -> dict[str, Any]:
        """The next frame, within ``wait`` seconds."""
        assert self.conn is not None
        text = await asyncio.wait_for(self.conn.recv(), wait)
        frame: dict[str, Any] = json.loads(text)
        self.seen.append(frame)
        return frame

    async def until(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next frame that ``match``es (each frame's ``data``), within the deadline."""
        async with asyncio.timeout(WAIT):
            while True:
                frame = await self.next()
                if match(frame["data"]):
                    return frame

    async def call(self, channel: str, **data: Any) -> dict[str, Any]:
        """Send a request and return the reply's data (the frame echoing its id)."""
        rid = await self.send(channel, **data)
        frame = await self.until(lambda d: d.get("id") == rid)
        assert frame["channel"] == channel
        reply: dict[str, Any] = frame["data"]
        return reply

    async def events_until_finished(
        self, session_id: str, wait: float = WAIT
    ) -> list[dict[str, Any]]:
        """The session's ``event`` frames up to and including ``finished`` or ``failed``,
        within ``wait`` seconds."""
        out: list[dict[str, Any]] = []
        async with asyncio.timeout(wait):
            while True:
                data = (await self.next(wait))["data"]
                if data.get("type") == "event" and data["session_id"] == session_id:
                    out.append(data)
                    if data["event"]["type"] in ("finished", "failed"):
                        return out


@contextlib.asynccontextmanager
async def hub_over(home: Path, work: Path, llm: FakeLLMServer) -> AsyncIterator[Hub]:
    """A ``Hub`` of a runtime configured for ``llm``, on its store; its sessions are closed and
    the store given back at the end."""
    from openheim.runtime import Runtime

    write_config(home, llm, "", "")
    settings = load_settings(
        Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)}
    )
    runtime = Runtime(settings=settings)
    store = runtime.shared.borrow_store(settings.data_dir)
    hub = Hub(runtime, store)
    try:
        yield hub
    finally:
        await hub.close_all()
        runtime.shared.give_back(store)
