"""Telegram's Bot API over httpx: long polling with ``getUpdates`` (the offset kept in the
gateway's database, so a restart neither loses nor repeats updates), ``sendMessage`` for
replies, and the normaliser of an update into an ``Inbound`` record (also used by the
optional webhook)."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import httpx

from openheim.errors import PlatformError
from openheim.formats import safejson
from openheim.gateway.http import Sleep, request_with_retry, retry_after
from openheim.gateway.inbound import Deliver, Inbound, token_digest
from openheim.gateway.state import GatewayState

log = logging.getLogger(__name__)

API_BASE = "https://api.telegram.org"
POLL_TIMEOUT = 30
"""Seconds a ``getUpdates`` long poll waits for news."""
MAX_BACKOFF = 60.0
_BOT_ID = re.compile(r"([0-9]{1,20}):")
_FATAL = {
    401: "the bot token was refused",
    404: "the bot token was refused",
    409: "another client polls this bot, or a webhook is set (deleteWebhook, or mode = webhook)",
}


def normalise_update(update: Any) -> Inbound | None:
    """The text message an update carries, or None (edits, stickers, bots, messages sent on
    behalf of a chat, other updates). Ids must be integers (a bool is not one)."""
    message = update.get("message") if isinstance(update, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        return None
    if message.get("sender_chat") is not None:  # "from" is then a stand-in, not the person
        return None
    sender, chat = message.get("from"), message.get("chat")
    if not isinstance(sender, dict) or not isinstance(chat, dict) or sender.get("is_bot"):
        return None
    ids = (sender.get("id"), chat.get("id"), message.get("message_id"))
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return None
    sender_id, chat_id, message_id = ids
    return Inbound(
        "telegram",
        f"{chat_id}:{message_id}",
        str(sender_id),
        str(chat_id),
        message["text"],
        reply_to=str(message_id),
        private=chat.get("type") == "private",
    )


def bot_id(token: str) -> str:
    """The bot's user id, the digits a token starts with (``123456:secret``; public: it is
    the bot's id in every chat), or a digest of a token of another shape."""
    found = _BOT_ID.match(token)
    return found.group(1) if found else token_digest(token)


class Telegram:
    """A bot's client: the long-poll loop and replies."""

    name = "telegram"

    def __init__(
        self,
        token: str,
        state: GatewayState,
        *,
        api_base: str = API_BASE,
        webhook_secret: str | None = None,
        poll_timeout: int = POLL_TIMEOUT,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._base = f"{api_base.rstrip('/')}/bot{token}"
        self.bot_id = bot_id(token)
        self._cursor = f"telegram.offset/{self.bot_id}"  # each bot's updates have their own
        self._state = state
        self._webhook_secret = webhook_secret
        self._poll_timeout = poll_timeout
        self._sleep = sleep
        self._client = httpx.AsyncClient(timeout=poll_timeout + 30)

    async def receive(self, deliver: Deliver) -> None:
        """Poll until cancelled; an outage is retried with backoff, a refused token ends it.
        With a webhook secret, updates come through the webhook app instead."""
        if self._webhook_secret is not None:
            return
        raw = await self._state.off_loop(self._state.cursor, self._cursor)
        offset = int(raw) if raw is not None else None
        failures = 0
        while True:
            try:
                updates = await self._updates(offset)
            except PlatformError as err:
                if err.hint is not None:  # a refused token: polling again cannot help
                    raise
                failures += 1
                wait = min(MAX_BACKOFF, 0.5 * 2**failures)
                log.warning("telegram: %s; polling again in %.1f s", err, wait)
                await self._sleep(wait)
                continue
            failures = 0
            for update in updates:
                message = normalise_update(update)
                if message is not None:
                    await deliver(message)
                offset = int(update["update_id"]) + 1
                await self._state.off_loop(self._state.set_cursor, self._cursor, str(offset))

    def webhook_routes(self, deliver: Deliver) -> list[Any]:
        """``/telegram`` when the bot is set up for a webhook, else none."""
        if self._webhook_secret is None:
            return []
        from openheim.gateway.webhooks import telegram_routes

        return telegram_routes(self._webhook_secret, deliver)

    async def _updates(self, offset: int | None) -> list[dict[str, Any]]:
        """One long poll: the updates after ``offset`` (which acknowledges those before)."""
        body: dict[str, Any] = {"timeout": self._poll_timeout, "allowed_updates": ["message"]}
        if offset is not None:
            body["offset"] = offset
        try:
            response = await self._client.post(f"{self._base}/getUpdates", json=body)
        except httpx.TransportError as err:
            raise PlatformError(
                f"getUpdates failed: network error ({type(err).__name__})"
            ) from None
        if response.status_code in _FATAL:
            raise _fatal(response.status_code)
        if response.status_code == 429:
            await self._sleep(retry_after(response) or 1.0)
            return []
        data = _json(response)
        if response.status_code != 200 or not data.get("ok"):
            raise PlatformError(f"getUpdates answered HTTP {response.status_code}")
        result = data.get("result")
        if not isinstance(result, list):
            raise PlatformError("getUpdates answered without a result list")
        return [u for u in result if isinstance(u, dict) and isinstance(u.get("update_id"), int)]

    async def send(self, to: Inbound, text: str) -> None:
        """One message to the chat, as a reply to the message it answers."""
        body: dict[str, Any] = {"chat_id": to.channel, "text": text}
        if to.reply_to is not None:
            body["reply_parameters"] = {
                "message_id": int(to.reply_to),
                "allow_sending_without_reply": True,
            }
        url = f"{self._base}/sendMessage"
        response = await request_with_retry(
            "telegram sendMessage", lambda: self._client.post(url, json=body), sleep=self._sleep
        )
        if response.status_code in _FATAL:
            raise _fatal(response.status_code)
        if response.status_code != 200:
            detail = _json(response).get("description", "")
            raise PlatformError(
                f"telegram sendMessage refused: HTTP {response.status_code} {detail}"
            )

    async def delete(self, message: Inbound) -> None:
        """``deleteMessage``: in a group the bot must be an admin allowed to delete messages."""
        assert message.reply_to is not None  # every Telegram record carries its message id
        body = {"chat_id": message.channel, "message_id": int(message.reply_to)}
        url = f"{self._base}/deleteMessage"
        response = await request_with_retry(
            "telegram deleteMessage", lambda: self._client.post(url, json=body), sleep=self._sleep
        )
        if response.status_code != 200:
            detail = _json(response).get("description", "")
            raise PlatformError(
                f"telegram deleteMessage refused: HTTP {response.status_code} {detail}"
            )

    async def aclose(self) -> None:
        await self._client.aclose()


def _fatal(status: int) -> PlatformError:
    return PlatformError(
        f"Telegram: {_FATAL[status]} (HTTP {status})",
        hint="check the token that gateway.telegram.token names (see docs/gateway.md)",
    )


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = safejson.loads(response.content)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
