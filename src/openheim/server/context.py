"""``ServerContext``: what every route and channel of one server shares.

The runtime (settings, sessions), the session store, the token, the hub of live sessions and
the limits. Routes reach it as ``request.app.state.openheim``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from openheim.config.load import Settings
from openheim.runtime import Runtime
from openheim.server.busy import BusyBoard
from openheim.server.collector import Collector
from openheim.server.hub import Hub
from openheim.serving.auth import Auth
from openheim.skills import SkillsManager, skills_for
from openheim.store import SessionStore
from openheim.tools.base import ToolSet

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from openheim.server.acp_prompts import HubPrompts

DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_MAX_FRAME = 16 * 1024 * 1024


class Queued(Protocol):
    """A WebSocket client with frames queued for it (``server.ws.Connection``)."""

    queued_bytes: int

    def disconnect_slow(self) -> None: ...


class AcpBridge(Protocol):
    """Serves ACP for a runtime over an accepted WebSocket until it closes, refusing frames
    over a size, cancelling the prompts other clients and replicas run through the hub
    (``openheim.acp.websocket.serve_websocket``)."""

    async def __call__(
        self, websocket: WebSocket, runtime: Runtime, max_frame_bytes: int, hub: HubPrompts, /
    ) -> None: ...


@dataclass
class Backlog:
    """The frames queued for all of the server's WebSocket clients together: their bytes
    (``total``, bounded by ``server.ws.MAX_TOTAL_PENDING_BYTES``) and the clients holding any."""

    total: int = 0
    clients: set[Queued] = field(default_factory=set)


@dataclass
class ServerContext:
    """The shared state of one ``openheim serve`` process (see the module docstring)."""

    runtime: Runtime
    store: SessionStore
    auth: Auth
    hub: Hub
    max_frame_bytes: int = DEFAULT_MAX_FRAME
    started: float = field(default_factory=time.time)
    collector: Collector | None = None
    """The process's garbage collection pacing while the server runs (``openheim serve``
    sets one; an app embedded in another program leaves the collector alone)."""
    backlog: Backlog = field(default_factory=Backlog)
    """The frames queued for every WebSocket client together (``server.ws``)."""
    busy: BusyBoard = field(default_factory=BusyBoard)
    """Who is told when a session's turn begins or ends (``server.busy``)."""
    acp: AcpBridge | None = None
    """What serves ``/acp``, handed in by whoever composes the server (``openheim serve``
    hands it ACP's); None: the app has no ``/acp``."""

    def __post_init__(self) -> None:
        shared = self.hub.relay
        if shared is not None:  # replicas: a prompt's busy changes are told across them
            shared.on_busy = self.busy.tell
            self.busy.share = shared.share_busy

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def work_dir(self) -> Path:
        return self.settings.work_dir

    def skills(self) -> SkillsManager:
        return skills_for(self.settings)

    def tools(self) -> ToolSet:
        """The tools a new session offers, MCP servers' aside."""
        from openheim.runtime import tools

        return tools.select_tools(self.settings, None, self.runtime.tools)

    async def mcp_status(self) -> list[dict[str, Any]]:
        """Each configured MCP server, connected for the question and closed again."""
        servers = self.settings.mcp_servers
        if not servers:
            return []
        from openheim.mcp import McpManager

        async with McpManager(servers) as manager:
            rows = manager.status()
        return [
            {
                "name": row.name,
                "transport": row.transport,
                "connected": row.connected,
                "tools": row.tools,
                "error": row.error,
            }
            for row in rows
        ]
