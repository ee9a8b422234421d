"""Connections to MCP servers: start them concurrently, keep them, restart a crashed one, stop all.

``McpManager`` is an async context manager; enter and exit it in the same task (it holds a task
group). Each server runs in its own task that owns the SDK client, so a failing, crashing or
hanging server never takes the others down and start-up never waits past its timeout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from anyio.abc import TaskGroup
from mcp.client._transport import Transport
from mcp.client.streamable_http import streamable_http_client

from mcp import Client, MCPError
from openheim.config.schema import McpServerEntry
from openheim.errors import ConfigError, ToolError
from openheim.formats.urls import is_loopback
from openheim.mcp.tools import build_tools
from openheim.mcp.transport import ChildProcess, stdio_transport
from openheim.process.child_env import child_env
from openheim.redaction.secrets import register_secret
from openheim.tools.base import Tool

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0
MAX_TOOLS_PAGES = 50

TransportKind = Literal["stdio", "http"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One row of ``openheim mcp list``."""

    name: str
    transport: TransportKind
    connected: bool
    tools: int
    error: str | None


def check_entry(name: str, entry: McpServerEntry) -> TransportKind:
    """The transport of ``entry``; ConfigError when it is unusable (names the server)."""
    if bool(entry.command) == bool(entry.url):
        raise ConfigError(
            f"MCP server {name!r} needs exactly one of `command` (stdio) or `url` (HTTP)",
            hint=f"edit [mcp_servers.{name}] in config.toml",
        )
    if entry.url:
        if not entry.url.startswith(("http://", "https://")):
            raise ConfigError(
                f"MCP server {name!r}: url must start with http:// or https://",
                hint=f"fix the url of [mcp_servers.{name}]",
            )
        if entry.headers and entry.url.startswith("http://") and not is_loopback(entry.url):
            raise ConfigError(
                f"MCP server {name!r}: headers would be sent in clear text over plain http://",
                hint=f"use an https:// url for [mcp_servers.{name}], or drop its headers",
            )
        return "http"
    return "stdio"


class ServerConnection:
    """One server: its SDK client (while connected), its tool listing and its last error."""

    def __init__(self, name: str, entry: McpServerEntry, manager_tg: TaskGroup) -> None:
        self.name = name
        self.entry = entry
        self.transport = check_entry(name, entry)
        self.tools: list[mcp_types.Tool] = []
        self.error: str | None = None
        self.client: Client | None = None
        self.child = ChildProcess()
        self.broken = False
        """Set when the connection closed under a call: the next call reconnects (stdio)."""
        self._was_up = False
        self._tg = manager_tg
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._lock = anyio.Lock()
        for value in (*entry.env.values(), *entry.headers.values()):
            register_secret(value)

    @property
    def startup_timeout(self) -> float:
        return self.entry.startup_timeout or DEFAULT_STARTUP_TIMEOUT

    @property
    def call_timeout(self) -> float:
        return self.entry.call_timeout or DEFAULT_CALL_TIMEOUT

    def status(self) -> ServerStatus:
        connected = self.client is not None and self._healthy()
        return ServerStatus(self.name, self.transport, connected, len(self.tools), self.error)

    def _healthy(self) -> bool:
        return not self.broken and (self.transport == "http" or self.child.alive)

    def _make_transport(self) -> Transport:
        if self.transport == "http":
            assert self.entry.url is not None
            client = httpx2.AsyncClient(
                headers=self.entry.headers, timeout=httpx2.Timeout(30.0, read=None)
            )
            return streamable_http_client(self.entry.url, http_client=client)
        assert self.entry.command is not None
        self.child = ChildProcess()
        env = child_env(extra=self.entry.env)
        argv = [self.entry.command, *self.entry.args]
        return stdio_transport(argv, env, self.entry.cwd, self.child)

    async def start(self) -> None:
        """Connect and list tools within the start-up timeout; on failure record ``error``."""
        self._stop, self._done = anyio.Event(), anyio.Event()
        ready = anyio.Event()
        self._tg.start_soon(self._serve, ready, self._stop, self._done)
        await ready.wait()

    async def _serve(self, ready: anyio.Event, stop: anyio.Event, done: anyio.Event) -> None:
        """Own the SDK client for the connection's lifetime (the SDK needs one task to do so)."""
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.startup_timeout
                async with Client(self._make_transport(), client_info=_client_info()) as client:
                    self.tools = await _list_tools(client)
                    self.client, self.error, self.broken = client, None, False
                    self._was_up = True
                    scope.deadline = math.inf
                    ready.set()
                    await stop.wait()
            if scope.cancelled_caught and not ready.is_set():
                self.error = f"did not start within {self.startup_timeout:g} s{self._stderr()}"
        except Exception as err:  # any failure of an untrusted server is reported, not raised
            self.error = f"{_describe(err)}{self._stderr()}"
        finally:
            self.client = None
            ready.set()
            done.set()

    def _stderr(self) -> str:
        tail = self.child.stderr_tail()
        return f" (stderr: {tail})" if tail else ""

    async def stop(self) -> None:
        """Close the connection and wait until its process group is gone."""
        self._stop.set()
        await self._done.wait()

    async def ready_client(self) -> Client:
        """The connected client; a crashed stdio server is restarted once here."""
        async with self._lock:
            if self.client is not None and self._healthy():
                return self.client
            if self._was_up:  # crashed or closed after a good start: one restart per crash
                self._was_up = False
                await self.stop()
                await self.start()
            if self.client is None:
                raise ToolError(
                    f"MCP server {self.name!r} is not connected: {self.error or 'unknown error'}",
                    hint="try another approach; the user can check it with `openheim mcp list`",
                )
            return self.client

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call ``tool``; a timeout cancels the request on the server (ToolError either way)."""
        client = await self.ready_client()
        try:
            with anyio.fail_after(self.call_timeout):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(
                f"MCP tool {tool!r} on {self.name!r} did not answer within {self.call_timeout:g} s",
                hint="the call was cancelled; try smaller input or another approach",
            ) from None
        except MCPError as err:
            if err.error.code != mcp_types.CONNECTION_CLOSED:
                raise ToolError(
                    f"MCP tool {tool!r} on {self.name!r} failed: {err.error.message}",
                    hint="check the arguments against the tool's schema",
                ) from None
            self.broken = True
            raise ToolError(
                f"MCP server {self.name!r} closed the connection during {tool!r}"
                + " (it will be restarted on the next call)",
                hint="try again once, or another approach if it keeps failing",
            ) from None
        except Exception as err:  # an untrusted server's malformed result
            raise ToolError(
                f"MCP tool {tool!r} on {self.name!r} returned an invalid result: {_describe(err)}",
                hint="try another approach; the server is not following the MCP specification",
            ) from None


class McpManager:
    """All configured MCP servers: ``async with McpManager(servers) as mcp: mcp.tools()``."""

    def __init__(self, servers: Mapping[str, McpServerEntry]) -> None:
        for name, entry in servers.items():
            check_entry(name, entry)
        self._entries = dict(servers)
        self._tg: TaskGroup | None = None
        self.connections: dict[str, ServerConnection] = {}

    async def __aenter__(self) -> McpManager:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self.connections = {n: ServerConnection(n, e, self._tg) for n, e in self._entries.items()}
        async with anyio.create_task_group() as starting:
            for conn in self.connections.values():
                starting.start_soon(conn.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Stop every server. An error of the body is not handed to the task group (which
        would wrap it in an ExceptionGroup): it leaves as it came, so the surfaces print its
        one-line message. A cancellation is handed over, for the group's scope to settle."""
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as stopping:
                for conn in self.connections.values():
                    stopping.start_soon(conn.stop)
        if exc is not None and not isinstance(exc, anyio.get_cancelled_exc_class()):
            await self._tg.__aexit__(None, None, None)
            return None
        return await self._tg.__aexit__(exc_type, exc, tb)

    def status(self) -> list[ServerStatus]:
        """One row per configured server, in config order."""
        return [c.status() for c in self.connections.values()]

    def tools(self) -> list[Tool]:
        """Every connected server's tools as openheim tools, named ``{server}__{tool}``."""
        return build_tools(self.connections.values())


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    """Every page of the server's tool listing (bounded: a server could page forever)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOLS_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _client_info() -> mcp_types.Implementation:
    from openheim._version import __version__

    return mcp_types.Implementation(name="openheim", version=__version__)


def _describe(err: BaseException) -> str:
    """One line for an error from the SDK or a server (exception groups unwrapped)."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
