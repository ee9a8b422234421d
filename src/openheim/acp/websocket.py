"""The Agent Client Protocol over a WebSocket, one JSON-RPC message per text frame: what
``openheim serve`` mounts at ``/acp`` (the launcher hands ``serve_websocket`` to the server, so
neither surface imports the other).

The same ``serve_acp`` as ``openheim acp`` serves it: the socket is bridged to a local socket
pair whose one end ``serve_acp`` reads and writes as newline-delimited JSON, so the protocol
behaves exactly as over stdio. A text frame becomes one line (raw line breaks, which valid JSON
holds only as whitespace, become spaces); each line back becomes one text frame. A frame over
the size limit is answered with a JSON-RPC invalid-request error and the socket stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket

from starlette.websockets import WebSocket, WebSocketDisconnect

from openheim.acp.elsewhere import Elsewhere
from openheim.acp.server import serve_acp
from openheim.acp.transport import MAX_LINE_BYTES
from openheim.runtime import Runtime


async def serve_websocket(
    websocket: WebSocket, runtime: Runtime, max_frame_bytes: int, elsewhere: Elsewhere
) -> None:
    """ACP for ``runtime`` on an accepted ``websocket`` until it closes; a text frame over
    ``max_frame_bytes`` is refused with a JSON-RPC error; ``elsewhere`` reaches the prompts
    the server's other clients and replicas run (``session/cancel``)."""
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=theirs, limit=MAX_LINE_BYTES)
    bridge_in, bridge_out = await asyncio.open_connection(sock=ours, limit=MAX_LINE_BYTES)
    server = asyncio.create_task(serve_acp(reader, writer, runtime, elsewhere))
    back = asyncio.create_task(_to_client(bridge_in, websocket))
    try:
        await _to_server(websocket, bridge_out, max_frame_bytes)
    finally:
        bridge_out.close()
        with contextlib.suppress(Exception):
            await server
        back.cancel()
        with contextlib.suppress(BaseException):
            await back
        with contextlib.suppress(Exception):
            await bridge_out.wait_closed()


async def _to_server(websocket: WebSocket, out: asyncio.StreamWriter, limit: int) -> None:
    """Each text frame from the client as one line to ``serve_acp``, until the socket closes."""
    while True:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            continue  # binary frames carry nothing in this protocol
        if len(text.encode()) > limit:
            await _refuse(websocket, f"a frame over {limit} bytes")
            continue
        line = text.replace("\r", " ").replace("\n", " ").strip()
        if line:
            out.write(line.encode() + b"\n")
            await out.drain()


async def _to_client(reader: asyncio.StreamReader, websocket: WebSocket) -> None:
    while line := await reader.readline():
        await websocket.send_text(line.decode().rstrip("\n"))


async def _refuse(websocket: WebSocket, details: str) -> None:
    error = {"code": -32600, "message": "Invalid request", "data": {"details": details}}
    await websocket.send_text(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
