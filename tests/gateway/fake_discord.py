"""A fake Discord on loopback: the gateway WebSocket (HELLO, IDENTIFY, READY, HEARTBEAT and
its ACK, DISPATCH MESSAGE_CREATE, RESUME with the missed events replayed, RESUMED) and the REST
endpoints that create and delete a message, in the real JSON shapes (API v10)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

TOKEN = "MTAxfake.discord.bot-token-0123456789"
BOT_ID = "900000000000000001"
GUILD = "700000000000000001"


@dataclass
class Created:
    """One message the bot created through REST."""

    channel: str
    content: str
    allowed_mentions: Any
    reply_to: str | None


@dataclass
class FakeDiscord:
    """The fake's state: the event log by sequence, what the bot sent, how it connected."""

    ws_url: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    created: list[Created] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    """``(channel, message id)`` of each message the bot deleted."""
    may_delete: bool = True
    """False: deleting is refused (403), as for a bot without Manage Messages."""
    identifies: int = 0
    resumes: list[int] = field(default_factory=list)
    heartbeats: int = 0
    _socket: WebSocket | None = None
    _next_id: int = 1_000_000_000_000_000_000
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                WebSocketRoute("/gateway", self._gateway),
                Route("/api/v10/channels/{channel}/messages", self._create, methods=["POST"]),
                Route(
                    "/api/v10/channels/{channel}/messages/{message}",
                    self._delete,
                    methods=["DELETE"],
                ),
            ]
        )

    async def message(self, user: str, channel: str, text: str, *, guild: bool = False) -> None:
        """A user's message: dispatched now if the bot is connected, else kept for a RESUME.
        In a server channel, ``<@BOT_ID>`` in the text mentions the bot."""
        self._next_id += 1
        data: dict[str, Any] = {
            "id": str(self._next_id),
            "channel_id": channel,
            "author": {"id": user, "username": f"user{user}", "bot": False},
            "content": text,
            "mentions": [{"id": BOT_ID, "username": "bot"}] if f"<@{BOT_ID}>" in text else [],
            "type": 0,
        }
        if guild:
            data["guild_id"] = GUILD
        await self._dispatch("MESSAGE_CREATE", data)

    async def drop(self) -> None:
        """Close the bot's connection with a resumable close code (as Discord does at times)."""
        socket, self._socket = self._socket, None
        assert socket is not None
        await socket.close(code=4000)

    async def ask_to_reconnect(self) -> None:
        """Send RECONNECT (op 7), as Discord does before it moves a session."""
        socket, self._socket = self._socket, None
        assert socket is not None
        await socket.send_json({"op": 7, "d": None})

    async def wait(self, what: str, predicate: Any, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def wait_created(self, count: int) -> list[Created]:
        await self.wait("created", lambda: len(self.created) >= count)
        return list(self.created)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _dispatch(self, kind: str, data: dict[str, Any]) -> None:
        event = {"op": 0, "t": kind, "s": len(self.events) + 1, "d": data}
        self.events.append(event)
        if self._socket is not None:
            await self._socket.send_json(event)

    async def _gateway(self, socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_json({"op": 10, "d": {"heartbeat_interval": 1000}})
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                payload = json.loads(await socket.receive_text())
                if not await self._handle(socket, payload):
                    return

    async def _handle(self, socket: WebSocket, payload: Any) -> bool:
        op, data = payload.get("op"), payload.get("d") or {}
        if op == 1:
            self.heartbeats += 1
            await socket.send_json({"op": 11})
        elif op == 2:
            if data.get("token") != TOKEN:
                await socket.close(code=4004)
                return False
            self.identifies += 1
            self._socket = socket
            ready = {
                "v": 10,
                "session_id": "fake-session",
                "resume_gateway_url": self.ws_url,
                "user": {"id": BOT_ID, "username": "bot", "bot": True},
                "guilds": [],
            }
            await self._dispatch("READY", ready)
        elif op == 6:
            assert data["token"] == TOKEN and data["session_id"] == "fake-session"
            self.resumes.append(data["seq"])
            for event in self.events[data["seq"] :]:
                await socket.send_json(event)
            self._socket = socket
            await self._dispatch("RESUMED", {})
        await self._notify()
        return True

    async def _create(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bot {TOKEN}":
            return JSONResponse({"message": "401: Unauthorized", "code": 0}, status_code=401)
        body = await request.json()
        if len(body["content"]) > 2000:
            return JSONResponse({"message": "Invalid Form Body", "code": 50035}, status_code=400)
        reference = body.get("message_reference") or {}
        created = Created(
            request.path_params["channel"],
            body["content"],
            body.get("allowed_mentions"),
            reference.get("message_id"),
        )
        self.created.append(created)
        await self._notify()
        self._next_id += 1
        return JSONResponse({"id": str(self._next_id), "content": body["content"]})

    async def _delete(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bot {TOKEN}":
            return JSONResponse({"message": "401: Unauthorized", "code": 0}, status_code=401)
        if not self.may_delete:
            return JSONResponse({"message": "Missing Permissions", "code": 50013}, status_code=403)
        params = request.path_params
        self.deleted.append((params["channel"], params["message"]))
        await self._notify()
        return Response(status_code=204)
