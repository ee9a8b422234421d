"""Telegram end to end: the gateway long-polls a fake Bot API on loopback and answers with
``FakeLLMServer`` as the model."""

from __future__ import annotations

from pathlib import Path

from openheim.gateway.pipeline import NOT_ADMITTED
from openheim.gateway.state import GatewayState
from openheim.testing import FakeLLMServer
from tests.gateway.fake_telegram import TOKEN, FakeTelegram
from tests.gateway.support import running, write_config

ANN, BOB = 111, 222
ENV = {"TG_TOKEN": TOKEN, "GW_PASS": "open sesame"}


def configure(home: Path, llm: FakeLLMServer, url: str, extra: str = "") -> None:
    write_config(
        home,
        llm,
        f'[gateway]\n{extra}\n[gateway.telegram]\ntoken = "env:TG_TOKEN"\n'
        f'api_base = "{url}"\nallowed_users = ["{ANN}"]\n',
    )


async def test_a_conversation_keeps_its_session(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["Hello Ann!", "You said hi before."]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "hi")
            first = await fake.wait_sent(1)
            await fake.message(ANN, "what did I say?")
            sent = await fake.wait_sent(2)
        second_request = llm.requests[1].messages
    assert [s.text for s in sent] == ["Hello Ann!", "You said hi before."]
    assert first[0].chat_id == str(ANN) and first[0].reply_to is not None
    texts = [m.get("content") for m in second_request]
    assert "hi" in texts and "Hello Ann!" in texts  # the same session went on


async def test_a_sender_off_the_allow_list_gets_nothing(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["for Ann"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(BOB, "let me in")
            await fake.message(ANN, "hi")
            sent = await fake.wait_sent(1)
        assert len(llm.requests) == 1
    assert [(s.chat_id, s.text) for s in sent] == [(str(ANN), "for Ann")]


async def test_the_passphrase_admits_until_revoked(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    from openheim.gateway.state import GatewayState

    fake, url = telegram
    with FakeLLMServer(["welcome Bob"]) as llm:
        configure(home, llm, url, 'passphrase = "env:GW_PASS"')
        async with running(home, work, ("telegram",), ENV):
            await fake.message(BOB, "hello?")
            await fake.message(BOB, "/auth open says me")
            await fake.message(BOB, "/auth open sesame")
            await fake.message(BOB, "hello again")
            sent = await fake.wait_sent(4)
            state = GatewayState(home / "gateway.db")
            assert state.revoke("telegram", str(BOB))
            state.close()
            await fake.message(BOB, "still there?")
            sent = await fake.wait_sent(5)
        assert len(llm.requests) == 1
    assert [s.text for s in sent] == [
        NOT_ADMITTED,
        "That passphrase is not right.",
        "You are authorised. Send /help for the commands.",
        "welcome Bob",
        NOT_ADMITTED,
    ]


async def test_the_rate_limit_holds_across_a_restart(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    limits = "rate_limit = 2\nrate_window_secs = 3600"
    with FakeLLMServer(["one", "two"]) as llm:
        configure(home, llm, url, limits)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "1")
            await fake.wait_sent(1)
            await fake.message(ANN, "2")
            await fake.wait_sent(2)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "3")
            await fake.message(ANN, "4")
            await fake.message(ANN, "/help")
            sent = await fake.wait_sent(3)
        assert len(llm.requests) == 2
    assert [s.text for s in sent[:2]] == ["one", "two"]
    assert sent[2].text.startswith("Too many messages: try again in ")
    assert len(sent) == 3  # the later refusals of the window are not answered


async def test_a_restart_resumes_the_conversation(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["noted: blue", "it was blue"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "my colour is blue")
            await fake.wait_sent(1)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "which colour?")
            sent = await fake.wait_sent(2)
        texts = [m.get("content") for m in llm.requests[1].messages]
    assert sent[1].text == "it was blue"
    assert "my colour is blue" in texts and "noted: blue" in texts
    assert fake.offsets[-1] is not None  # the second run went on from the stored offset
    state = GatewayState(home / "gateway.db")
    assert state.cursor("telegram.offset/123456") == str(fake.offsets[-1])  # the bot's own
    state.close()


async def test_a_duplicate_delivery_is_answered_once(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["once", "next"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            update = await fake.message(ANN, "hi")
            await fake.wait_sent(1)
            await fake.redeliver(update)
            await fake.message(ANN, "and then")
            sent = await fake.wait_sent(2)
        assert len(llm.requests) == 2
    assert [s.text for s in sent] == ["once", "next"]


async def test_a_429_is_waited_out_for_its_retry_after(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    fake.throttle = [1.0]
    with FakeLLMServer(["patient"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "hi")
            sent = await fake.wait_sent(1)
    assert sent[0].text == "patient"
    assert sent[0].at - fake.refused_at[0] >= 1.0


async def test_a_long_reply_is_split_at_telegrams_limit(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    words = " ".join(f"word{i}" for i in range(1500))
    assert 3 * 4096 < len(words) < 4 * 4000
    with FakeLLMServer([words]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "talk a lot")
            sent = await fake.wait_sent(4)
    assert len(sent) == 4 and all(len(s.text) <= 4096 for s in sent)
    assert " ".join(s.text for s in sent) == words  # no word broken, none lost
