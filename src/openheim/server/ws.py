"""``/ws``: one WebSocket carrying the ``agent``, ``fs`` and ``system`` channels.

The server first sends ``{"channel": "system", "data": {"type": "connected", ...}}``. Each
client frame is answered on its channel with its ``id`` echoed. A frame over the size limit,
not JSON or not a ``{channel, data}`` object gets an ``error`` on the ``system`` channel and
the connection stays open. Frames to the client go through one queue and one writer task, so
a session's events keep their order whichever task produced them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from openheim._version import __version__
from openheim.errors import OpenheimError
from openheim.mailbox import Mailbox
from openheim.secrets import redact
from openheim.server.agent import AgentChannel
from openheim.server.auth import SUBPROTOCOL
from openheim.server.context import ServerContext
from openheim.server.frames import BadRequest, parse_frame, reply_id
from openheim.server.fs import FsChannel

log = logging.getLogger(__name__)

MAX_PENDING = 50_000
"""Frames queued for one client before it counts as too slow and is disconnected (room for a
whole replay of a session's kept frames)."""


class Connection:
    """One ``/ws`` client: its outgoing queue and its channels."""

    def __init__(self, websocket: WebSocket, context: ServerContext) -> None:
        self.websocket = websocket
        self.context = context
        self.queue: Mailbox[str | None] = Mailbox()
        self.overflowed = False
        self._closer: asyncio.Future[None] | None = None
        self.agent = AgentChannel(context, self)
        self.fs = FsChannel(context, self.send)

    def push(self, frame: str) -> None:
        """An agent-channel frame of an attached session (JSON text, serialised once)."""
        self._put(f'{{"channel": "agent", "data": {frame}}}')

    def send(self, channel: str, data: dict[str, Any]) -> None:
        self._put(json.dumps({"channel": channel, "data": data}, ensure_ascii=False))

    def _put(self, text: str) -> None:
        """Queue a frame; a client that lets ``MAX_PENDING`` frames pile up is disconnected
        (1013, try again later): it re-attaches and reads what it missed from the store."""
        if self.overflowed:
            return
        if len(self.queue) >= MAX_PENDING:
            self.overflowed = True
            self.queue.clear()
            self.queue.put(None)
            self._closer = asyncio.ensure_future(self.websocket.close(code=1013))
            return
        self.queue.put(text)

    async def writer(self) -> None:
        while (text := await self.queue.get()) is not None:
            await self.websocket.send_text(text)
            if self.overflowed:
                return

    async def serve(self) -> None:
        self.send("system", {"type": "connected", "version": __version__, "protocol": 1})
        writer = asyncio.create_task(self.writer())
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                await self.take(message.get("text"), message.get("bytes"))
        except WebSocketDisconnect:
            return
        finally:
            self.agent.detach_all()
            self.fs.close()
            self.queue.put(None)
            with contextlib.suppress(Exception):
                await writer

    async def take(self, text: str | None, data: bytes | None) -> None:
        """Answer one frame."""
        limit = self.context.max_frame_bytes
        size = len(data) if data is not None else len((text or "").encode())
        if size > limit:
            self._error("system", None, f"the frame is {size} bytes, over {limit}", _smaller())
            return
        if text is None:
            self._error("system", None, "binary frames are not accepted", "send JSON as text")
            return
        try:
            channel, request = parse_frame(text)
        except BadRequest as err:
            self._error("system", None, err.message, err.hint)
            return
        await self.dispatch(channel, request)

    async def dispatch(self, channel: str, request: dict[str, Any]) -> None:
        rid = reply_id(request)
        try:
            if channel == "agent":
                reply = await self.agent.handle(request)
            elif channel == "fs":
                reply = await self.fs.handle(request)
            else:
                reply = _system(request)
        except BadRequest as err:
            self._error(channel, rid, err.message, err.hint)
            return
        except OpenheimError as err:
            self._error(channel, rid, err.message, err.hint or "")
            return
        except Exception:  # the connection outlives a bug in one request
            log.exception("a %s request failed", channel)
            self._error(channel, rid, "the request failed inside the server", "see its log")
            return
        self.send(channel, {**reply, "id": rid} if rid is not None else reply)

    def _error(self, channel: str, rid: str | int | None, message: str, hint: str) -> None:
        data: dict[str, Any] = {"type": "error", "message": redact(message), "hint": redact(hint)}
        if rid is not None:
            data["id"] = rid
        self.send(channel, data)


def _smaller() -> str:
    return "send smaller frames ([server] max_frame_bytes)"


def _system(request: dict[str, Any]) -> dict[str, Any]:
    kind = request.get("type")
    if kind == "ping":
        return {"type": "pong"}
    raise BadRequest(f"unknown system request {kind!r}", "the system channel answers ping")


async def accept(websocket: WebSocket) -> None:
    """Accept the upgrade, with the ``openheim.v1`` subprotocol when the client offers it (a
    browser that offered subprotocols fails the connection unless one is chosen)."""
    offered = websocket.scope.get("subprotocols") or []
    await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)


async def ws_endpoint(websocket: WebSocket) -> None:
    context: ServerContext = websocket.app.state.openheim
    await accept(websocket)
    await Connection(websocket, context).serve()
