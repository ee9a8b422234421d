"""The webhook app of the platforms that push (Starlette on uvicorn, loopback by default):

- ``GET /whatsapp``: the verification handshake (``hub.mode=subscribe``, ``hub.verify_token``
  compared in constant time, ``hub.challenge`` echoed); ``POST /whatsapp``: a delivery, refused
  unless its ``X-Hub-Signature-256`` is the HMAC of its body under the app secret.
- ``POST /telegram``: an update, refused unless its ``X-Telegram-Bot-Api-Secret-Token`` is the
  configured secret.

A delivery is answered 200 once its messages are stored, so the platform does not send it
again; the answers to it go out afterwards through the platform's API.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from openheim.formats import safejson
from openheim.gateway.inbound import Deliver
from openheim.gateway.telegram import normalise_update
from openheim.gateway.whatsapp import normalise_webhook, signature_valid

if TYPE_CHECKING:
    from openheim.gateway.whatsapp import WhatsApp

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20
"""The largest delivery taken, in bytes."""


def _refuse(status: int, why: str) -> Response:
    log.warning("webhook: refused a delivery: %s", why)
    return PlainTextResponse(why, status_code=status)


async def _body(request: Request) -> bytes | None:
    """The request body, or None when it is over ``MAX_BODY``."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def whatsapp_routes(whatsapp: WhatsApp, deliver: Deliver) -> list[Route]:
    """``/whatsapp``: the verification handshake and signed deliveries."""

    async def verify(request: Request) -> Response:
        query = request.query_params
        token = query.get("hub.verify_token", "")
        if query.get("hub.mode") != "subscribe" or not hmac.compare_digest(
            token.encode(), whatsapp.verify_token.encode()
        ):
            return _refuse(403, "the verify token does not match")
        return PlainTextResponse(query.get("hub.challenge", ""))

    async def delivery(request: Request) -> Response:
        body = await _body(request)
        if body is None:
            return _refuse(413, "the delivery is too large")
        header = request.headers.get("x-hub-signature-256")
        if not signature_valid(whatsapp.app_secret, body, header):
            return _refuse(401, "the X-Hub-Signature-256 signature does not match")
        try:
            payload = safejson.loads(body)
        except ValueError:
            return _refuse(400, "the delivery is not JSON")
        for message in normalise_webhook(payload, whatsapp.phone_number_id):
            await deliver(message)
        return PlainTextResponse("ok")

    return [
        Route("/whatsapp", verify, methods=["GET"]),
        Route("/whatsapp", delivery, methods=["POST"]),
    ]


def telegram_routes(secret: str, deliver: Deliver) -> list[Route]:
    """``/telegram``: updates carrying the secret token header."""

    async def update(request: Request) -> Response:
        header = request.headers.get("x-telegram-bot-api-secret-token", "")
        if not hmac.compare_digest(header.encode(), secret.encode()):
            return _refuse(403, "the secret token does not match")
        body = await _body(request)
        if body is None:
            return _refuse(413, "the update is too large")
        try:
            message = normalise_update(safejson.loads(body))
        except ValueError:
            return _refuse(400, "the update is not JSON")
        if message is not None:
            await deliver(message)
        return PlainTextResponse("ok")

    return [Route("/telegram", update, methods=["POST"])]


class _Server(uvicorn.Server):
    """uvicorn leaving the process's signals to the command (Ctrl-C and SIGTERM stop the whole
    gateway, not only its webhook app)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_webhooks(routes: list[Any], sock: socket.socket) -> None:
    """Serve ``routes`` on the bound ``sock`` until cancelled."""
    config = uvicorn.Config(Starlette(routes=routes), log_level="warning", lifespan="off")
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await asyncio.shield(task)
    finally:
        server.should_exit = True
        await asyncio.wait([task], timeout=10)
