"""A client of Discord's gateway WebSocket (API v10, JSON encoding), written to the documented
protocol: HELLO (op 10) gives the heartbeat interval; IDENTIFY (op 2) opens a session, whose
READY dispatch names it and the URL to resume it at; HEARTBEAT (op 1) carries the last
sequence number and is acknowledged (op 11); DISPATCH (op 0) carries the events. After a lost
connection (or RECONNECT, op 7) the client connects to the resume URL and sends RESUME (op 6)
with the session and the last sequence, so the events missed meanwhile are replayed; an
INVALID_SESSION (op 9) that cannot be resumed, or a close code that forbids resuming, makes it
identify afresh. A close code that says the token or intents are wrong ends it."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from openheim.errors import PlatformError
from openheim.formats import safejson
from openheim.gateway.http import MAX_WAIT, Sleep

log = logging.getLogger(__name__)

GATEWAY_URL = "wss://gateway.discord.gg/?v=10&encoding=json"
INTENTS = (1 << 9) | (1 << 12) | (1 << 15)
"""GUILD_MESSAGES, DIRECT_MESSAGES and MESSAGE_CONTENT (privileged: enable it for the bot)."""
FATAL_CLOSES = {
    4004: "the bot token was refused",
    4010: "the shard is invalid",
    4011: "the bot needs sharding",
    4012: "the API version is invalid",
    4013: "the intents are invalid",
    4014: "an intent is not enabled for the bot (enable Message Content in the portal)",
}
FRESH_CLOSES = {4007, 4009}
"""Close codes after which the session cannot be resumed: identify afresh."""

OnDispatch = Callable[[str, dict[str, Any]], Awaitable[None]]


class DiscordGateway:
    """One bot's gateway connection, reconnected and resumed until cancelled."""

    def __init__(self, token: str, url: str, on_dispatch: OnDispatch, sleep: Sleep) -> None:
        self._token = token
        self._url = url
        self._on_dispatch = on_dispatch
        self._sleep = sleep
        self.session_id: str | None = None
        self.resume_url: str | None = None
        self.sequence: int | None = None
        self.user_id: str | None = None

    async def run(self) -> None:
        """Connect, and after each lost connection connect again (backing off) and resume."""
        failures = 0
        while True:
            resuming = self.session_id is not None and self.sequence is not None
            url = (self.resume_url or self._url) if resuming else self._url
            try:
                async with connect(url, max_size=2**22) as ws:
                    failures = 0
                    await self._connection(ws, resuming)
                continue
            except ConnectionClosed as closed:
                self._closed(closed)
            except (OSError, InvalidHandshake, TimeoutError) as err:
                log.warning("discord: cannot reach the gateway (%s)", type(err).__name__)
            failures += 1
            await self._sleep(min(MAX_WAIT, 0.5 * 2**failures * random.uniform(0.8, 1.2)))

    def _closed(self, closed: ConnectionClosed) -> None:
        code = closed.rcvd.code if closed.rcvd is not None else None
        if code in FATAL_CLOSES:
            raise PlatformError(
                f"Discord: {FATAL_CLOSES[code]} (close code {code})",
                hint="check the bot in the Discord developer portal and gateway.discord.token",
            )
        if code in FRESH_CLOSES:
            self.session_id = self.sequence = None
        log.info("discord: the gateway closed the connection (code %s); reconnecting", code)

    async def _connection(self, ws: ClientConnection, resuming: bool) -> None:
        hello = safejson.loads(await asyncio.wait_for(ws.recv(), 30))
        if hello.get("op") != 10:
            raise PlatformError("Discord: the gateway did not start with HELLO")
        interval = float(hello["d"]["heartbeat_interval"]) / 1000
        if resuming:
            resume = {"token": self._token, "session_id": self.session_id, "seq": self.sequence}
            await ws.send(json.dumps({"op": 6, "d": resume}))
        else:
            await ws.send(json.dumps({"op": 2, "d": self._identify()}))
        acked = asyncio.Event()
        acked.set()
        beat = asyncio.create_task(self._heartbeat(ws, interval, acked))
        try:
            async for raw in ws:
                if not await self._handle(ws, safejson.loads(raw), acked):
                    return
        finally:
            beat.cancel()

    def _identify(self) -> dict[str, Any]:
        properties = {"os": "linux", "browser": "openheim", "device": "openheim"}
        return {"token": self._token, "intents": INTENTS, "properties": properties}

    async def _handle(self, ws: ClientConnection, payload: Any, acked: asyncio.Event) -> bool:
        """Act on one payload; False when this connection should end (to reconnect)."""
        op, data = payload.get("op"), payload.get("d")
        if isinstance(payload.get("s"), int):
            self.sequence = payload["s"]
        if op == 0 and isinstance(data, dict):
            await self._dispatch(str(payload.get("t")), data)
        elif op == 1:
            await ws.send(json.dumps({"op": 1, "d": self.sequence}))
        elif op == 11:
            acked.set()
        elif op == 7:
            log.info("discord: the gateway asked to reconnect")
            return False
        elif op == 9:
            if not data:
                self.session_id = self.sequence = None
            await self._sleep(random.uniform(1, 5))
            return False
        return True

    async def _dispatch(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "READY":
            self.session_id = data.get("session_id")
            self.resume_url = _with_query(data.get("resume_gateway_url"))
            self.user_id = str(data.get("user", {}).get("id"))
            log.info("discord: connected")
        elif kind == "RESUMED":
            log.info("discord: session resumed")
        await self._on_dispatch(kind, data)

    async def _heartbeat(self, ws: ClientConnection, interval: float, acked: asyncio.Event) -> None:
        """Beat every ``interval`` (the first after a random part of it); a beat not
        acknowledged by the next one means a dead connection: close it to resume."""
        await asyncio.sleep(interval * random.random())
        try:
            while acked.is_set():
                acked.clear()
                await ws.send(json.dumps({"op": 1, "d": self.sequence}))
                await asyncio.sleep(interval)
            log.info("discord: heartbeat not acknowledged; reconnecting")
            await ws.close(4000, "heartbeat not acknowledged")
        except ConnectionClosed:
            return


def _with_query(url: Any) -> str | None:
    """The resume URL with the version and encoding the client speaks."""
    if not isinstance(url, str) or not url:
        return None
    return url if "?" in url else f"{url}?v=10&encoding=json"
