"""``/auth`` is taken only in a private chat: in a Telegram group or a Discord server channel
the passphrase would be shown to everyone there, so the attempt is refused (and counted), the
bot deletes the message where it may, and the phrase is never echoed or logged."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from openheim.gateway.discord import normalise_message
from openheim.gateway.inbound import Inbound
from openheim.gateway.pipeline import GUESSES_PER_SENDER, NOT_ADMITTED, NOT_PRIVATE
from openheim.gateway.telegram import normalise_update
from openheim.testing import FakeLLMServer
from tests.gateway.fake_discord import BOT_ID, FakeDiscord
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.support import running, write_config
from tests.gateway.test_discord import ENV as DISCORD_ENV
from tests.gateway.test_telegram import BOB, ENV, configure

GROUP = -1001234567890
PHRASE = "open sesame"


async def test_telegram_group_auth_is_refused_deleted_and_never_echoed(
    home: Path,
    work: Path,
    telegram: tuple[FakeTelegram, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake, url = telegram
    caplog.set_level(logging.DEBUG)
    with FakeLLMServer(["welcome Bob"]) as llm:
        configure(home, llm, url, 'passphrase = "env:GW_PASS"')
        async with running(home, work, ("telegram",), ENV):
            await fake.message(BOB, f"/auth {PHRASE}", chat=GROUP, kind="supergroup")
            await fake.wait_sent(1)
            await fake.message(BOB, "hello", chat=GROUP, kind="group")
            await fake.wait_sent(2)
            await fake.message(BOB, f"/auth {PHRASE}")
            await fake.message(BOB, "hello again")
            sent = await fake.wait_sent(4)
        assert len(llm.requests) == 1
    group_message = fake.history[0]["message"]["message_id"]
    assert fake.deleted == [(str(GROUP), group_message)]
    assert sent[0].chat_id == str(GROUP) and sent[0].text == NOT_PRIVATE
    assert sent[1].text == NOT_ADMITTED  # the group attempt admitted no one
    assert [s.text for s in sent[2:]] == [
        "You are authorised. Send /help for the commands.",
        "welcome Bob",
    ]
    assert all("sesame" not in s.text for s in sent)
    assert "sesame" not in caplog.text


async def test_group_attempts_count_against_the_passphrase_limit(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    fake.may_delete = False  # the bot is no admin there: refusing still works
    with FakeLLMServer([]) as llm:
        configure(home, llm, url, 'passphrase = "env:GW_PASS"')
        async with running(home, work, ("telegram",), ENV):
            for _ in range(GUESSES_PER_SENDER):
                await fake.message(BOB, f"/auth {PHRASE}", chat=GROUP, kind="group")
            await fake.wait_sent(GUESSES_PER_SENDER)
            await fake.message(BOB, f"/auth {PHRASE}")
            sent = await fake.wait_sent(GUESSES_PER_SENDER + 1)
    assert fake.deleted == []
    assert all(s.text == NOT_PRIVATE for s in sent[:-1])
    assert sent[-1].text.startswith("Too many passphrase attempts")


async def test_discord_server_auth_is_refused_and_deleted(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    api = discord.ws_url.replace("ws://", "http://").replace("/gateway", "/api/v10")
    with FakeLLMServer(["welcome"]) as llm:
        write_config(
            home,
            llm,
            f'[gateway]\npassphrase = "env:GW_PASS"\n[gateway.discord]\ntoken = "env:DC_TOKEN"\n'
            f'api_base = "{api}"\ngateway_url = "{discord.ws_url}"\n',
        )
        env = {**DISCORD_ENV, "GW_PASS": PHRASE}
        async with running(home, work, ("discord",), env):
            await discord.wait("ready", lambda: discord.identifies == 1)
            await discord.message("4242", "600", f"<@{BOT_ID}> /auth {PHRASE}", guild=True)
            await discord.wait("deleted", lambda: len(discord.deleted) == 1)
            await discord.message("4242", "700", f"/auth {PHRASE}")  # a direct message
            await discord.message("4242", "700", "hi")
            created = await discord.wait_created(3)
    assert discord.deleted == [("600", discord.events[1]["d"]["id"])]
    assert created[0].channel == "600" and created[0].content == NOT_PRIVATE
    assert [c.content for c in created[1:]] == [
        "You are authorised. Send /help for the commands.",
        "welcome",
    ]
    assert all("sesame" not in c.content for c in created)


def _telegram(chat: dict[str, Any]) -> Inbound | None:
    person = {"id": 5, "is_bot": False}
    return normalise_update(
        {"message": {"message_id": 1, "from": person, "chat": chat, "text": "x"}}
    )


def test_only_a_chat_with_the_bot_alone_is_private() -> None:
    for kind, private in (("private", True), ("group", False), ("supergroup", False)):
        message = _telegram({"id": 5, "type": kind})
        assert message is not None and message.private is private, kind
    missing = _telegram({"id": 5})
    assert missing is not None and not missing.private
    direct = {"id": "9", "type": 0, "channel_id": "5", "content": "x", "author": {"id": "42"}}
    in_server = {**direct, "guild_id": "7", "content": "<@1> x", "mentions": [{"id": "1"}]}
    assert [normalise_message(d, "1") for d in (direct, in_server)] == [
        Inbound("discord", "9", "42", "5", "x", "9", private=True),
        Inbound("discord", "9", "42", "5", "x", "9", private=False),
    ]


def test_a_record_stored_without_the_flag_is_not_private() -> None:
    stored = (
        '{"platform": "telegram", "message_id": "1:2", "sender": "1", "channel": "1", "text": "x"}'
    )
    assert Inbound.from_json(stored).private is False
    private = Inbound("telegram", "1:2", "1", "1", "x", private=True)
    assert Inbound.from_json(private.to_json()) == private
