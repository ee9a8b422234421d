"""``openheim mcp list``: each configured MCP server, whether it connects, and its tools.
``openheim mcp serve``: openheim itself as an MCP server on stdio or streamable HTTP
(``openheim.mcp_server``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping

from openheim.config.load import load_settings
from openheim.config.schema import McpServerEntry
from openheim.events import notice_line
from openheim.term import exit_codes


def mcp_command(args: argparse.Namespace) -> int:
    if args.mcp_command == "serve":
        return _serve(args)
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


def _serve(args: argparse.Namespace) -> int:
    """Serve on stdio until the client closes stdin, or on HTTP until interrupted; notices go to
    stderr (stdout is the protocol's)."""
    from openheim.cli.settings import settings_from_flags

    settings = settings_from_flags(args)
    sys.stderr.writelines(f"{notice_line(notice)}\n" for notice in settings.notices)
    from openheim.runtime import Runtime

    runtime = Runtime(settings=settings)
    if args.http:
        from openheim.mcp_server.http import serve_http

        asyncio.run(serve_http(runtime, args.host, args.port))
        return exit_codes.OK
    from openheim.mcp_server.server import serve_stdio

    asyncio.run(serve_stdio(runtime))
    return exit_codes.OK
