"""WhatsApp end to end: signed webhook deliveries to the gateway's webhook app, replies through
a fake Graph API, ``FakeLLMServer`` as the model; and Telegram's optional webhook."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from openheim.testing import FakeLLMServer
from tests.gateway import fake_telegram
from tests.gateway.fake_whatsapp import (
    APP_SECRET,
    PHONE_ID,
    TOKEN,
    VERIFY_TOKEN,
    FakeGraph,
    delivery,
    signed,
)
from tests.gateway.loopback import free_socket, serving
from tests.gateway.support import running, write_config

ANN = "15551234567"
ENV = {"WA_TOKEN": TOKEN, "WA_SECRET": APP_SECRET, "WA_VERIFY": VERIFY_TOKEN}


@pytest.fixture
async def graph() -> AsyncIterator[tuple[FakeGraph, str]]:
    fake = FakeGraph()
    async with serving(fake.app()) as url:
        yield fake, url


def configure(home: Path, llm: FakeLLMServer, url: str) -> None:
    write_config(
        home,
        llm,
        '[gateway.whatsapp]\ntoken = "env:WA_TOKEN"\napp_secret = "env:WA_SECRET"\n'
        f'verify_token = "env:WA_VERIFY"\nphone_number_id = "{PHONE_ID}"\n'
        f'api_base = "{url}/v21.0"\nallowed_users = ["{ANN}"]\n',
    )


@contextlib.asynccontextmanager
async def webhook(
    home: Path, work: Path, names: tuple[str, ...]
) -> AsyncIterator[httpx.AsyncClient]:
    sock = free_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with (
        running(home, work, names, ENV, webhook=sock),
        httpx.AsyncClient(base_url=base, timeout=10) as client,
    ):
        yield client


async def test_the_verification_handshake(
    home: Path, work: Path, graph: tuple[FakeGraph, str]
) -> None:
    _, url = graph
    with FakeLLMServer([]) as llm:
        configure(home, llm, url)
        async with webhook(home, work, ("whatsapp",)) as client:
            query = {"hub.mode": "subscribe", "hub.challenge": "1158201444"}
            good = await client.get("/whatsapp", params={**query, "hub.verify_token": VERIFY_TOKEN})
            bad = await client.get("/whatsapp", params={**query, "hub.verify_token": "guess"})
    assert (good.status_code, good.text) == (200, "1158201444")
    assert bad.status_code == 403 and "1158201444" not in bad.text


async def test_a_conversation_by_signed_webhook(
    home: Path, work: Path, graph: tuple[FakeGraph, str]
) -> None:
    fake, url = graph
    with FakeLLMServer(["**Hello** Ann", "Again"]) as llm:
        configure(home, llm, url)
        async with webhook(home, work, ("whatsapp",)) as client:
            body = delivery(ANN, "hi", "wamid.IN1")
            first = await client.post("/whatsapp", content=body, headers=signed(body))
            await fake.wait_sent(1)
            again = await client.post("/whatsapp", content=body, headers=signed(body))
            body = delivery(ANN, "and again", "wamid.IN2")
            await client.post("/whatsapp", content=body, headers=signed(body))
            sent = await fake.wait_sent(2)
        texts = [m.get("content") for m in llm.requests[1].messages]
    assert first.status_code == 200 and again.status_code == 200
    assert [m["text"]["body"] for m in sent] == ["*Hello* Ann", "Again"]
    assert sent[0]["to"] == ANN and sent[0]["context"] == {"message_id": "wamid.IN1"}
    assert sent[0]["messaging_product"] == "whatsapp" and sent[0]["type"] == "text"
    assert "hi" in texts and len(llm.requests) == 2  # the duplicate was not answered


async def test_a_forged_signature_is_refused(
    home: Path, work: Path, graph: tuple[FakeGraph, str]
) -> None:
    fake, url = graph
    with FakeLLMServer(["only the genuine one"]) as llm:
        configure(home, llm, url)
        async with webhook(home, work, ("whatsapp",)) as client:
            forged = delivery(ANN, "forged", "wamid.F1")
            wrong_key = await client.post("/whatsapp", content=forged, headers=signed(forged, "x"))
            body = delivery(ANN, "original", "wamid.F2")
            headers = signed(body)
            tampered = body.replace(b"original", b"tampered")
            swapped = await client.post("/whatsapp", content=tampered, headers=headers)
            unsigned = await client.post("/whatsapp", content=forged)
            genuine = await client.post("/whatsapp", content=body, headers=headers)
            sent = await fake.wait_sent(1)
        prompts = [r.messages[-1]["content"] for r in llm.requests]
    assert [wrong_key.status_code, swapped.status_code, unsigned.status_code] == [401] * 3
    assert genuine.status_code == 200
    assert prompts == ["original"]
    assert [m["text"]["body"] for m in sent] == ["only the genuine one"]


async def test_telegrams_webhook_checks_its_secret_token(home: Path, work: Path) -> None:
    fake = fake_telegram.FakeTelegram()
    async with serving(fake.app()) as url:
        with FakeLLMServer(["by webhook"]) as llm:
            write_config(
                home,
                llm,
                f'[gateway.telegram]\ntoken = "env:TG"\napi_base = "{url}"\nmode = "webhook"\n'
                'webhook_secret = "env:TG_SECRET"\nallowed_users = ["111"]\n',
            )
            env = {"TG": fake_telegram.TOKEN, "TG_SECRET": "s3cret-token_1"}
            sock = free_socket()
            base = f"http://127.0.0.1:{sock.getsockname()[1]}"
            await fake.message(111, "hello by webhook")
            update = fake.history[-1]
            header = "X-Telegram-Bot-Api-Secret-Token"
            async with (
                running(home, work, ("telegram",), env, webhook=sock),
                httpx.AsyncClient(base_url=base, timeout=10) as client,
            ):
                wrong = await client.post("/telegram", json=update, headers={header: "no"})
                right = await client.post(
                    "/telegram", json=update, headers={header: "s3cret-token_1"}
                )
                sent = await fake.wait_sent(1)
    assert (wrong.status_code, right.status_code) == (403, 200)
    assert [s.text for s in sent] == ["by webhook"]
    assert fake.offsets == []  # no polling in webhook mode
