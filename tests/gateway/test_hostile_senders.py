"""Senders who should not reach the agent: a WhatsApp delivery replayed after its id is
forgotten, a Discord webhook or system message, and a passphrase guess kept out of the log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any, cast

import pytest

from openheim.gateway.auth import Authoriser
from openheim.gateway.discord import normalise_message
from openheim.gateway.inbound import Deliver, Inbound
from openheim.gateway.pipeline import (
    GUESSES_IN_ALL,
    GUESSES_PER_SENDER,
    NOT_ADMITTED,
    NOT_PRIVATE,
    Gateway,
)
from openheim.gateway.ratelimit import RateLimiter
from openheim.gateway.state import KEEP_HANDLED_SECS, GatewayState
from openheim.gateway.telegram import normalise_update
from openheim.gateway.whatsapp import normalise_webhook
from openheim.runtime import Runtime
from tests.gateway.fake_whatsapp import PHONE_ID, delivery

NOW = 1_800_000_000.0


def _stamped(timestamp: object) -> Any:
    payload = json.loads(delivery("15551234567", "hi", "wamid.1"))
    payload["entry"][0]["changes"][0]["value"]["messages"][0]["timestamp"] = timestamp
    return payload


def _aged(seconds: float) -> Any:
    return _stamped(str(int(NOW - seconds)))


def test_a_whatsapp_delivery_replayed_after_its_id_is_forgotten_is_dropped() -> None:
    assert len(normalise_webhook(_aged(60), PHONE_ID, now=NOW)) == 1
    assert normalise_webhook(_aged(KEEP_HANDLED_SECS + 60), PHONE_ID, now=NOW) == []
    assert normalise_webhook(_aged(-3600), PHONE_ID, now=NOW) == []  # from the future
    for odd in ("", "12e3", "-1", 17, None, "1" * 400):
        assert normalise_webhook(_stamped(odd), PHONE_ID, now=NOW) == [], odd


def _discord(**extra: Any) -> dict[str, Any]:
    message = {"id": "9", "type": 0, "channel_id": "5", "content": "hi", "author": {"id": "42"}}
    return {**message, **extra}


def test_only_a_discord_users_own_message_reaches_the_agent() -> None:
    assert normalise_message(_discord(), "1") is not None
    assert normalise_message(_discord(type=19), "1") is not None  # a reply
    assert normalise_message(_discord(webhook_id="42"), "1") is None  # posted by a webhook
    assert normalise_message(_discord(type=7), "1") is None  # a system message
    assert normalise_message(_discord(type=None), "1") is None
    assert normalise_message(_discord(author={"username": "no id"}), "1") is None
    assert normalise_message(_discord(author={"id": 42}), "1") is None  # ids are strings
    for odd in ("1:2", "../../guilds/1", "", "1 2", "x" * 40):  # ids are snowflakes: digits
        assert normalise_message(_discord(author={"id": odd}), "1") is None, odd
        assert normalise_message(_discord(channel_id=odd), "1") is None, odd
        assert normalise_message(_discord(id=odd), "1") is None, odd


def test_a_whatsapp_sender_is_a_number() -> None:
    for odd in ("1:2", "+15551234567", "../x", "", "1" * 40):
        payload = json.loads(delivery(odd, "hi", "wamid.1"))
        assert normalise_webhook(payload, PHONE_ID) == [], odd


class _Sink:
    name = "telegram"
    bot_id = "1"

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def receive(self, deliver: Deliver) -> None:
        """Nothing to receive."""

    def webhook_routes(self, deliver: Deliver) -> list[Any]:
        return []

    async def send(self, to: Inbound, text: str) -> None:
        self.sent.append(text)

    async def delete(self, message: Inbound) -> None:
        """Nothing to delete: these senders write in private."""

    async def aclose(self) -> None:
        """Nothing to close."""


async def test_a_passphrase_guess_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = GatewayState(tmp_path / "gateway.db")
    sink = _Sink()
    gateway = Gateway(
        cast(Runtime, None),
        state,
        Authoriser({}, "open sesame", state),
        RateLimiter(state, limit=5, window=60),
        {"telegram": sink},
    )
    caplog.set_level(logging.DEBUG)
    for number, phrase in enumerate(("my-bank-password", "open sesame")):
        await gateway.deliver(
            Inbound("telegram", str(number), "7", "7", f"/auth {phrase}", private=True)
        )
    async with asyncio.timeout(5):
        while len(sink.sent) < 2:
            await asyncio.sleep(0.01)
    await gateway.aclose()
    assert sink.sent[1].startswith("You are authorised")
    assert "my-bank-password" not in caplog.text and "sesame" not in caplog.text


def _gateway(tmp_path: Path, sink: _Sink) -> Gateway:
    state = GatewayState(tmp_path / "gateway.db")
    auth = Authoriser({}, "open sesame", state)
    limiter = RateLimiter(state, limit=1000, window=60)  # a generous message limit
    return Gateway(cast(Runtime, None), state, auth, limiter, {"telegram": sink})


async def _replies(sink: _Sink, count: int) -> list[str]:
    async with asyncio.timeout(5):
        while len(sink.sent) < count:
            await asyncio.sleep(0.01)
    return sink.sent


async def test_passphrase_guesses_are_limited_per_sender_and_in_all(tmp_path: Path) -> None:
    sink = _Sink()
    gateway = _gateway(tmp_path, sink)
    texts = [f"/auth guess{n}" for n in range(GUESSES_PER_SENDER)] + ["/auth open sesame"]
    for number, text in enumerate(texts):
        await gateway.deliver(Inbound("telegram", f"a{number}", "7", "7", text, private=True))
    sent = await _replies(sink, len(texts))
    assert sent[-1].startswith("Too many passphrase attempts")  # even the right one, now
    senders = GUESSES_IN_ALL // (GUESSES_PER_SENDER - 1) + 1
    for sender in range(100, 100 + senders):  # many accounts, each under its own limit
        for number in range(GUESSES_PER_SENDER - 1):
            await gateway.deliver(
                Inbound(
                    "telegram", f"b{sender}-{number}", str(sender), "1", "/auth x", private=True
                )
            )
    await _replies(sink, len(texts) + senders * (GUESSES_PER_SENDER - 1))
    await gateway.deliver(
        Inbound("telegram", "last", "999", "999", "/auth open sesame", private=True)
    )
    sent = await _replies(sink, len(texts) + senders * (GUESSES_PER_SENDER - 1) + 1)
    await gateway.aclose()
    assert sent[-1].startswith("Too many passphrase attempts")


def _update(**extra: Any) -> dict[str, Any]:
    message = {"message_id": 5, "text": "hi", "from": {"id": 7, "is_bot": False}}
    return {"update_id": 1, "message": {**message, "chat": {"id": 7}, **extra}}


def test_only_a_telegram_users_own_message_reaches_the_agent() -> None:
    assert normalise_update(_update()) is not None
    on_behalf = {"id": -100123, "type": "channel"}
    assert normalise_update(_update(sender_chat=on_behalf)) is None  # sent as a chat
    assert normalise_update(_update(**{"from": {"id": True, "is_bot": False}})) is None
    assert normalise_update({"update_id": 2, "edited_message": _update()["message"]}) is None


def test_the_gateway_database_is_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        state = GatewayState(tmp_path / "data" / "gateway.db")
        state.receive(Inbound("telegram", "1", "7", "7", "/auth open sesame"))  # until handled
        state.close()
    finally:
        os.umask(old)
    for path in (tmp_path / "data").glob("gateway.db*"):  # with its WAL and shared memory
        assert path.stat().st_mode & 0o077 == 0, path


class _GroupSink(_Sink):
    """A platform whose chats are groups: it records what the bot deletes."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    async def delete(self, message: Inbound) -> None:
        self.deleted.append(message.message_id)


async def _all_handled(state: GatewayState) -> None:
    async with asyncio.timeout(5):
        while state.unhandled("telegram"):
            await asyncio.sleep(0.01)


async def test_a_flood_from_a_sender_not_admitted_is_rate_limited(tmp_path: Path) -> None:
    sink = _Sink()
    state = GatewayState(tmp_path / "gateway.db")
    limiter = RateLimiter(state, limit=5, window=3600)
    auth = Authoriser({}, "open sesame", state)
    gateway = Gateway(cast(Runtime, None), state, auth, limiter, {"telegram": sink})
    for number in range(100):
        await gateway.deliver(Inbound("telegram", f"s{number}", "66", "66", "spam", private=True))
    await _all_handled(state)
    await gateway.aclose()
    assert sink.sent[:5] == [NOT_ADMITTED] * 5
    assert len(sink.sent) == 6 and sink.sent[5].startswith("Too many messages")


@pytest.mark.parametrize(
    "text",
    [
        "/auth\nopen sesame",
        "/auth\topen sesame",
        "/auth\r\nopen sesame",
        "/AUTH\nopen sesame",
        "/auth@openheim_bot\nopen sesame",
        "/auth\u200bopen sesame",
        "  /auth\u00a0open sesame",
    ],
)
async def test_auth_in_a_group_never_reaches_the_agent_however_it_is_spaced(
    tmp_path: Path, text: str
) -> None:
    sink = _GroupSink()
    state = GatewayState(tmp_path / "gateway.db")
    auth = Authoriser({"telegram": frozenset({"7"})}, "open sesame", state)  # admitted
    limiter = RateLimiter(state, limit=100, window=60)
    runtime = cast(Runtime, None)  # a turn would fail on it: nothing may reach the agent
    gateway = Gateway(runtime, state, auth, limiter, {"telegram": sink})
    await gateway.deliver(Inbound("telegram", "g1", "7", "-100", text, private=False))
    await _all_handled(state)
    await gateway.aclose()
    assert sink.sent == [NOT_PRIVATE]
    assert sink.deleted == ["g1"]
