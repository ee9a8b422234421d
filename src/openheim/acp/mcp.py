"""The client's MCP servers (``mcpServers`` of session/new, load and resume) as MCP client
entries; the session connects them like configured ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio

from openheim.config.schema import McpServerEntry


def mcp_servers(servers: Sequence[Any]) -> dict[str, McpServerEntry]:
    """Entries by name; transports openheim did not advertise are invalid params."""
    out: dict[str, McpServerEntry] = {}
    for server in servers:
        if isinstance(server, McpServerStdio):
            out[server.name] = McpServerEntry(
                command=server.command,
                args=list(server.args),
                env={var.name: var.value for var in server.env},
            )
        elif isinstance(server, HttpMcpServer):
            out[server.name] = McpServerEntry(
                url=server.url, headers={h.name: h.value for h in server.headers}
            )
        else:
            kind = getattr(server, "type", type(server).__name__)
            raise RequestError.invalid_params(
                {"reason": f"MCP server {server.name!r} uses transport {kind!r}; "
                 "openheim connects stdio and http servers"}
            )  # fmt: skip
    return out
