"""The client's MCP servers (``mcpServers`` of session/new, load and resume) as MCP client
entries; the session connects them like configured ones.

A stdio server is a command the client asks openheim to run as the user, so which kinds are
started is the user's choice (``[acp] client_mcp_servers``: ``stdio``, ``http`` or ``none``;
only HTTP servers by default). A server of a kind not allowed is left out and the client is
told, in one line, which key allows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio

from openheim.config.schema import McpServerEntry

ALLOWED_KINDS: dict[str, frozenset[str]] = {
    "stdio": frozenset({"stdio", "http"}),
    "http": frozenset({"http"}),
    "none": frozenset(),
}
"""The kinds of client MCP servers each ``[acp] client_mcp_servers`` value starts."""
_RISK = {
    "stdio": "it runs a command the client chose as your user",
    "http": "it connects to a host the client chose",
}


@dataclass(frozen=True)
class ClientServers:
    """The client's servers to start, by name, and a line for each one left out."""

    entries: dict[str, McpServerEntry] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def mcp_servers(servers: Sequence[Any], allowed: str, config: Path) -> ClientServers:
    """The servers ``allowed`` (the ``client_mcp_servers`` of the user's ``config`` file) lets
    start; transports openheim does not speak are invalid params."""
    out = ClientServers()
    for server in servers:
        if isinstance(server, McpServerStdio):
            kind, entry = (
                "stdio",
                McpServerEntry(
                    command=server.command,
                    args=list(server.args),
                    env={var.name: var.value for var in server.env},
                ),
            )
        elif isinstance(server, HttpMcpServer):
            kind, entry = (
                "http",
                McpServerEntry(url=server.url, headers={h.name: h.value for h in server.headers}),
            )
        else:
            kind = getattr(server, "type", type(server).__name__)
            raise RequestError.invalid_params(
                {"reason": f"MCP server {server.name!r} uses transport {kind!r}; "
                 "openheim connects stdio and http servers"}
            )  # fmt: skip
        if kind in ALLOWED_KINDS[allowed]:
            out.entries[server.name] = entry
        else:
            out.refused.append(_refusal(server.name, kind, allowed, config))
    return out


def _refusal(name: str, kind: str, allowed: str, config: Path) -> str:
    return (
        f"MCP server {name!r} from the client was not started: {kind} servers from ACP clients "
        f'are off ([acp] client_mcp_servers = "{allowed}"; {_RISK[kind]}); to allow them, set '
        f'client_mcp_servers = "{kind}" under [acp] in {config}'
    )
