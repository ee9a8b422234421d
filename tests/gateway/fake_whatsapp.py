"""A fake WhatsApp Cloud API on loopback: the Graph ``/{phone-number-id}/messages`` endpoint,
and webhook deliveries in the real payload shape, signed as Meta signs them."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TOKEN = "EAAGfake-whatsapp-access-token-0123456789"
APP_SECRET = "fake-app-secret-0123456789abcdef"
VERIFY_TOKEN = "fake-verify-token-42"
PHONE_ID = "106540352242922"


@dataclass
class FakeGraph:
    """The Graph API's messages endpoint: what the business number sent."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    _count: int = 0
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v21.0/{phone}/messages", self._send, methods=["POST"])])

    async def wait_sent(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= count)
        return list(self.sent)

    async def _send(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            error = {
                "message": "Invalid OAuth access token.",
                "type": "OAuthException",
                "code": 190,
            }
            return JSONResponse({"error": error}, status_code=401)
        if request.path_params["phone"] != PHONE_ID:
            return JSONResponse({"error": {"message": "Unknown path", "code": 100}}, 400)
        body = await request.json()
        self.sent.append(body)
        async with self._changed:
            self._changed.notify_all()
        self._count += 1
        return JSONResponse(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                "messages": [{"id": f"wamid.OUT{self._count}"}],
            }
        )


def delivery(sender: str, text: str, message_id: str) -> bytes:
    """A webhook delivery of one text message, as the Cloud API posts it."""
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": PHONE_ID},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": sender}],
        "messages": [
            {
                "from": sender,
                "id": message_id,
                "timestamp": str(int(time.time())),
                "type": "text",
                "text": {"body": text},
            }
        ],
    }
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": "102290129340398", "changes": [{"value": value, "field": "messages"}]}],
    }
    return json.dumps(payload).encode()


def signed(body: bytes, secret: str = APP_SECRET) -> dict[str, str]:
    """The headers of a delivery signed with ``secret``."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={digest}"}
