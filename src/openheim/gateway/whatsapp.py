"""WhatsApp Cloud API: messages arrive by webhook (``webhooks``), each delivery signed with
the app secret (``X-Hub-Signature-256``); replies go through the Graph API's
``/{phone-number-id}/messages``. Here: the signature check, the normaliser of a webhook
payload into ``Inbound`` records, and the client that sends."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from typing import Any

import httpx

from openheim.errors import PlatformError
from openheim.gateway.http import Sleep, request_with_retry
from openheim.gateway.inbound import Deliver, Inbound, numeric_id
from openheim.gateway.state import KEEP_HANDLED_SECS

API_BASE = "https://graph.facebook.com/v21.0"
MAX_AGE = KEEP_HANDLED_SECS - 86_400.0
"""The oldest message taken, in seconds: a signature has no date, so a delivery replayed after
the inbox forgot its id would pass; its message's own timestamp must be newer than this."""
MAX_SKEW = 300.0
"""How far in the future a message's timestamp may be (clocks differ)."""
_DIGITS = re.compile(r"[0-9]{1,12}")


def signature_valid(app_secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is ``sha256=`` and the HMAC-SHA256 of ``body`` under the app secret
    (compared in constant time)."""
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(header[7:].strip().lower(), expected)


def normalise_webhook(
    payload: Any, phone_number_id: str, *, now: float | None = None
) -> list[Inbound]:
    """The text messages of a webhook delivery to ``phone_number_id`` (statuses, media, other
    numbers' messages and messages not sent within ``MAX_AGE`` of ``now`` are left out)."""
    now = time.time() if now is None else now
    found: list[Inbound] = []
    entries = payload.get("entry") if isinstance(payload, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        for change in changes if isinstance(changes, list) else []:
            if isinstance(change, dict) and change.get("field") == "messages":
                found += _messages(change.get("value"), phone_number_id, now)
    return found


def _recent(timestamp: Any, now: float) -> bool:
    """Whether ``timestamp`` (Unix seconds as a decimal string) is within the accepted age."""
    if not isinstance(timestamp, str) or not _DIGITS.fullmatch(timestamp):
        return False
    return -MAX_SKEW <= now - int(timestamp) <= MAX_AGE


def _messages(value: Any, phone_number_id: str, now: float) -> list[Inbound]:
    if not isinstance(value, dict):
        return []
    metadata = value.get("metadata")
    if not isinstance(metadata, dict) or str(metadata.get("phone_number_id")) != phone_number_id:
        return []
    found: list[Inbound] = []
    messages = value.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("type") != "text":
            continue
        if not _recent(message.get("timestamp"), now):
            continue
        text, sender, message_id = message.get("text"), message.get("from"), message.get("id")
        body = text.get("body") if isinstance(text, dict) else None
        if isinstance(body, str) and numeric_id(sender) and isinstance(message_id, str):
            found.append(
                Inbound("whatsapp", message_id, sender, sender, body, message_id, private=True)
            )
    return found


class WhatsApp:
    """One WhatsApp business number: its webhook's secrets and the Graph API client."""

    name = "whatsapp"

    def __init__(
        self,
        token: str,
        app_secret: str,
        verify_token: str,
        phone_number_id: str,
        *,
        api_base: str = API_BASE,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.app_secret = app_secret
        self.verify_token = verify_token
        self.phone_number_id = phone_number_id
        self.bot_id = phone_number_id
        self._url = f"{api_base.rstrip('/')}/{phone_number_id}/messages"
        self._sleep = sleep
        self._client = httpx.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"})

    async def receive(self, deliver: Deliver) -> None:
        """Nothing to poll: deliveries arrive through the webhook app."""

    def webhook_routes(self, deliver: Deliver) -> list[Any]:
        from openheim.gateway.webhooks import whatsapp_routes

        return whatsapp_routes(self, deliver)

    async def send(self, to: Inbound, text: str) -> None:
        """One text message to the sender, in reply to their message."""
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to.channel,
            "type": "text",
            "text": {"preview_url": False, "body": text},
        }
        if to.reply_to is not None:
            body["context"] = {"message_id": to.reply_to}
        response = await request_with_retry(
            "whatsapp send message",
            lambda: self._client.post(self._url, json=body),
            sleep=self._sleep,
        )
        if response.status_code == 401:
            raise PlatformError(
                "WhatsApp: the access token was refused (HTTP 401)",
                hint="check the token that gateway.whatsapp.token names (see docs/gateway.md)",
            )
        if response.status_code != 200:
            raise PlatformError(f"whatsapp send message refused: HTTP {response.status_code}")

    async def delete(self, message: Inbound) -> None:
        """Nothing: the Cloud API cannot delete a user's message (and every chat is private)."""

    async def aclose(self) -> None:
        await self._client.aclose()
