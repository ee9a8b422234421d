"""MCP client: connect to ``[mcp_servers.NAME]`` servers and expose their tools to the agent.

Importing this package imports the MCP SDK; the core imports it only when servers are configured.
"""

from __future__ import annotations

from openheim.mcp.client import McpManager, ServerStatus

__all__ = ["McpManager", "ServerStatus"]
