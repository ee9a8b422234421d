"""Discord: message events from the gateway WebSocket (``discord_gateway``), replies through
the REST endpoint ``POST /channels/{id}/messages`` with every mention disabled, and the
normaliser of a ``MESSAGE_CREATE`` into an ``Inbound`` record. In a server channel the bot
answers only messages that mention it; in direct messages, every message."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Any

import httpx

from openheim.errors import PlatformError
from openheim.gateway.discord_gateway import GATEWAY_URL, DiscordGateway
from openheim.gateway.http import Sleep, request_with_retry
from openheim.gateway.inbound import Deliver, Inbound, numeric_id, token_digest

API_BASE = "https://discord.com/api/v10"
USER_MESSAGE_TYPES = (0, 19)
"""The message types a person types: default and reply (system messages are left out)."""


def normalise_message(data: dict[str, Any], bot_id: str | None) -> Inbound | None:
    """The message a ``MESSAGE_CREATE`` carries, or None (bots, webhooks, system messages, the
    bot itself, server messages that do not mention it, empty text). Allow-listed: a user's
    own message, of a type a person types, with ids of digits."""
    author = data.get("author")
    content, message_id, channel = data.get("content"), data.get("id"), data.get("channel_id")
    if not isinstance(author, dict) or author.get("bot") or not isinstance(content, str):
        return None
    if data.get("type") not in USER_MESSAGE_TYPES or data.get("webhook_id") is not None:
        return None
    sender = author.get("id")
    if numeric_id(message_id) and numeric_id(channel) and numeric_id(sender) and sender != bot_id:
        return _addressed(data, bot_id, Inbound("discord", message_id, sender, channel, content))
    return None


def _addressed(data: dict[str, Any], bot_id: str | None, message: Inbound) -> Inbound | None:
    """``message`` when it is for the bot (a direct message, or a mention in a server),
    without the mention and as a reply to itself; None otherwise or when no text is left."""
    content = message.text
    if data.get("guild_id") is not None:
        mentioned = any(
            isinstance(m, dict) and str(m.get("id")) == bot_id for m in data.get("mentions", [])
        )
        if not mentioned:
            return None
        content = re.sub(rf"<@!?{re.escape(bot_id or '')}>", "", content)
    text = content.strip()
    if not text:
        return None
    private = data.get("guild_id") is None
    return dataclasses.replace(message, text=text, reply_to=message.message_id, private=private)


class Discord:
    """A bot's client: the gateway connection in, REST out."""

    name = "discord"

    def __init__(
        self,
        token: str,
        *,
        api_base: str = API_BASE,
        gateway_url: str = GATEWAY_URL,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._token = token
        self.bot_id = token_digest(token)  # its user id is known only once connected
        self._api = api_base.rstrip("/")
        self._gateway_url = gateway_url
        self._sleep = sleep
        self._client = httpx.AsyncClient(
            timeout=30, headers={"Authorization": f"Bot {token}", "User-Agent": "openheim"}
        )
        self.gateway: DiscordGateway | None = None

    async def receive(self, deliver: Deliver) -> None:
        """Run the gateway connection until cancelled, delivering each message for the bot."""

        async def on_dispatch(kind: str, data: dict[str, Any]) -> None:
            if kind == "MESSAGE_CREATE":
                assert self.gateway is not None
                message = normalise_message(data, self.gateway.user_id)
                if message is not None:
                    await deliver(message)

        self.gateway = DiscordGateway(self._token, self._gateway_url, on_dispatch, self._sleep)
        await self.gateway.run()

    def webhook_routes(self, deliver: Deliver) -> list[Any]:
        """None: Discord's events come over the gateway connection."""
        return []

    async def send(self, to: Inbound, text: str) -> None:
        """One message in the channel, as a reply, pinging no one."""
        body: dict[str, Any] = {"content": text, "allowed_mentions": {"parse": []}}
        if to.reply_to is not None:
            body["message_reference"] = {"message_id": to.reply_to, "fail_if_not_exists": False}
        url = f"{self._api}/channels/{to.channel}/messages"
        response = await request_with_retry(
            "discord create message", lambda: self._client.post(url, json=body), sleep=self._sleep
        )
        if response.status_code == 401:
            raise PlatformError(
                "Discord: the bot token was refused (HTTP 401)",
                hint="check the token that gateway.discord.token names (see docs/gateway.md)",
            )
        if response.status_code not in (200, 201):
            raise PlatformError(f"discord create message refused: HTTP {response.status_code}")

    async def delete(self, message: Inbound) -> None:
        """``DELETE /channels/{id}/messages/{id}``: in a server the bot needs Manage Messages."""
        url = f"{self._api}/channels/{message.channel}/messages/{message.message_id}"
        response = await request_with_retry(
            "discord delete message", lambda: self._client.delete(url), sleep=self._sleep
        )
        if response.status_code != 204:
            raise PlatformError(f"discord delete message refused: HTTP {response.status_code}")

    async def aclose(self) -> None:
        await self._client.aclose()
