"""A fake Telegram Bot API on loopback: ``getUpdates`` (long polling with offsets, as the real
API acknowledges updates), ``sendMessage`` and ``deleteMessage``, in the real JSON shapes, with
injected 429s."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TOKEN = "123456:ABC-fake-telegram-token-xyz"
HOLD = 1.0
"""Seconds a long poll is held at most here (the client asks for longer)."""


@dataclass
class Sent:
    """One ``sendMessage`` the fake accepted."""

    chat_id: str
    text: str
    reply_to: int | None
    at: float


@dataclass
class FakeTelegram:
    """The fake's state: updates to hand out, messages sent, offsets asked for."""

    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    offsets: list[int | None] = field(default_factory=list)
    throttle: list[float] = field(default_factory=list)
    """``retry_after`` seconds of the 429s to answer the next ``sendMessage`` calls with."""
    refused_at: list[float] = field(default_factory=list)
    outage: dict[str, int] = field(default_factory=dict)
    """Method name -> how many of its next calls answer 502 Bad Gateway."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every update ever queued."""
    deleted: list[tuple[str, int]] = field(default_factory=list)
    """``(chat_id, message_id)`` of each ``deleteMessage`` the fake accepted."""
    may_delete: bool = True
    """False: ``deleteMessage`` is refused, as for a bot that is not a group's admin."""
    most_polls: int = 0
    """The most ``getUpdates`` long polls held at once (Telegram refuses a second with 409)."""
    _polls: int = 0
    _next_update: int = 1000
    _next_message: int = 1
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/bot{token}/{method}", self._call, methods=["POST"])])

    async def message(
        self, user: int, text: str, chat: int | None = None, kind: str = "private"
    ) -> int:
        """Queue a text message from ``user`` in their private chat (or ``chat``, of type
        ``kind``: ``group``, ``supergroup``); its update id."""
        self._next_update += 1
        self._next_message += 1
        self.history.append(
            {
                "update_id": self._next_update,
                "message": {
                    "message_id": self._next_message,
                    "from": {"id": user, "is_bot": False, "first_name": "Ann"},
                    "chat": {"id": chat or user, "type": kind},
                    "date": int(time.time()),
                    "text": text,
                },
            }
        )
        self.updates.append(self.history[-1])
        async with self._changed:
            self._changed.notify_all()
        return self._next_update

    async def redeliver(self, update_id: int) -> None:
        """Hand out an update again (as Telegram does when an offset was not confirmed)."""
        again = next(u for u in self.history if u["update_id"] == update_id)
        self.updates.append(dict(again))
        async with self._changed:
            self._changed.notify_all()

    async def wait_sent(self, count: int, timeout: float = 10.0) -> list[Sent]:
        """The sent messages once there are at least ``count``."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= count)
        return list(self.sent)

    async def _call(self, request: Request) -> JSONResponse:
        if request.path_params["token"] != TOKEN:
            return _error(401, "Unauthorized")
        body = await request.json()
        method = request.path_params["method"]
        if self.outage.get(method):
            self.outage[method] -= 1
            return _error(502, "Bad Gateway")
        if method == "getUpdates":
            return await self._get_updates(body)
        if method == "sendMessage":
            return await self._send_message(body)
        if method == "deleteMessage":
            return await self._delete_message(body)
        return _error(404, "Not Found")

    async def _get_updates(self, body: dict[str, Any]) -> JSONResponse:
        offset = body.get("offset")
        self.offsets.append(offset)
        if offset is not None:  # confirms every update before it
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        self._polls += 1
        self.most_polls = max(self.most_polls, self._polls)
        try:
            async with self._changed:
                with_timeout = asyncio.wait_for(
                    self._changed.wait_for(lambda: bool(self.updates)), HOLD
                )
                with contextlib.suppress(TimeoutError):
                    await with_timeout
        finally:
            self._polls -= 1
        return JSONResponse({"ok": True, "result": self.updates[:100]})

    async def _send_message(self, body: dict[str, Any]) -> JSONResponse:
        if self.throttle:
            wait = self.throttle.pop(0)
            self.refused_at.append(time.monotonic())
            return JSONResponse(
                {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {wait}",
                    "parameters": {"retry_after": wait},
                },
                status_code=429,
            )
        text = body["text"]
        if len(text) > 4096:
            return _error(400, "Bad Request: message is too long")
        reply = body.get("reply_parameters", {}).get("message_id")
        self.sent.append(Sent(str(body["chat_id"]), text, reply, time.monotonic()))
        async with self._changed:
            self._changed.notify_all()
        self._next_message += 1
        return JSONResponse(
            {"ok": True, "result": {"message_id": self._next_message, "text": text}}
        )

    async def _delete_message(self, body: dict[str, Any]) -> JSONResponse:
        if not self.may_delete:
            return _error(400, "Bad Request: message can't be deleted")
        self.deleted.append((str(body["chat_id"]), int(body["message_id"])))
        async with self._changed:
            self._changed.notify_all()
        return JSONResponse({"ok": True, "result": True})


def _error(code: int, description: str) -> JSONResponse:
    return JSONResponse(
        {"ok": False, "error_code": code, "description": description}, status_code=code
    )
