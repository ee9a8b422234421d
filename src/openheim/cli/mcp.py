"""``openheim mcp list``: each configured MCP server, whether it connects, and its tools."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping

from openheim.cli import exit_codes
from openheim.config.load import load_settings
from openheim.config.schema import McpServerEntry


def mcp_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    if not settings.mcp_servers:
        sys.stdout.write("no MCP servers configured (add [mcp_servers.NAME] to config.toml)\n")
        return exit_codes.OK
    return asyncio.run(_list(settings.mcp_servers))


async def _list(servers: Mapping[str, McpServerEntry]) -> int:
    from openheim.mcp import McpManager

    async with McpManager(servers) as manager:
        rows = manager.status()
    width = max(len(row.name) for row in rows)
    for row in rows:
        state = "connected" if row.connected else "failed"
        detail = f"{row.tools} tools" if row.connected else (row.error or "")
        sys.stdout.write(f"{row.name:<{width}}  {row.transport:<5}  {state:<9}  {detail}\n")
    return exit_codes.OK if all(row.connected for row in rows) else exit_codes.ERROR
