"""A small MCP server for the client tests, over stdio or streamable HTTP.

Usage: ``test_server.py stdio|hang|garbage|linger [TAG]`` or ``test_server.py http PORT [TAG]``.
``hang`` never answers the handshake; ``garbage`` prints non-JSON lines then serves; ``linger``
serves, then keeps running after its input closes (a server that misses its client's end).
``TAG`` is ignored: tests put it on the command line to find the process in the process table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Image, MCPServer
from mcp_types import ToolAnnotations

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)

server = MCPServer("openheim-test")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def image() -> Image:
    """Return a one-pixel PNG."""
    return Image(data=PNG_1PX, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the reason."""
    raise ValueError(f"failed on purpose: {reason}")


CANCELLED: list[float] = []


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer; a cancellation from the client is counted."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(seconds)
        raise
    return "slept"


@server.tool()
def cancellations() -> int:
    """How many ``slow`` calls the client cancelled."""
    return len(CANCELLED)


@server.tool()
def crash() -> str:
    """Exit the server process at once, mid-call."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id (to tell a restarted server apart)."""
    return os.getpid()


@server.tool()
def spawn_child(tag: str) -> int:
    """Start a long-lived grandchild process in the server's group; its pid."""
    code = "import time; time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code, tag]).pid


@server.tool()
def weather(city: str) -> dict[str, Any]:
    """Structured output."""
    return {"city": city, "celsius": 21}


@server.tool(name="dotted.name/with spaces")
def odd_name() -> str:
    """A tool whose name needs sanitising."""
    return "odd"


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "hang":
        time.sleep(600)
    elif mode == "garbage":
        print("this is not json-rpc", flush=True)
        server.run("stdio")
    elif mode == "linger":
        server.run("stdio")
        time.sleep(600)
    elif mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)
