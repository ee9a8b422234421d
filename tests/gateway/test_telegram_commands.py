"""Telegram: chat commands, one turn at a time per conversation, and a tool call that would ask
being refused (the gateway has no one to ask)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.support import running
from tests.gateway.test_telegram import ANN, ENV, configure


async def test_a_tool_call_that_would_ask_is_denied(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    write = FakeToolCall("write_file", {"path": "owned.txt", "content": "x"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "I was not allowed."]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "write a file")
            sent = await fake.wait_sent(1)
        result = llm.requests[1].last_tool_result
    rule = "openheim permissions add 'allow path \"owned.txt\"'"
    assert sent[0].text == (
        "I was not allowed.\n\n"
        "1 tool call needed approval and no one could be asked. To let such calls run: run "
        'openheim in a terminal to be asked or set approval = "auto" in [gateway], or add this '
        f"rule:\n  {rule}\n"
        "1 tool call was denied; the answer above may describe work that was refused"
    )
    assert not (work / "owned.txt").exists()
    assert result is not None and "there is no one to ask in this session" in result


async def test_a_call_an_allow_rule_covers_runs(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    (home / "permissions.toml").write_text("[rules]\nallow = ['path \"notes/**\"']\n")
    write = FakeToolCall("write_file", {"path": "notes/todo.txt", "content": "milk"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "Noted."]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "note: milk")
            sent = await fake.wait_sent(1)
    assert sent[0].text == "Noted."
    assert (work / "notes" / "todo.txt").read_text() == "milk"


async def test_help_new_and_model(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["first", "fresh"]) as llm:
        configure(home, llm, url, 'models = ["fake-model", "fake-small"]')
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "/help@SomeBot")
            await fake.wait_sent(1)
            await fake.message(ANN, "remember 42")
            await fake.wait_sent(2)
            for text in ("/new", "/model gpt-9", "/model fake-small"):
                await fake.message(ANN, text)
            await fake.wait_sent(5)
            await fake.message(ANN, "what number?")
            sent = await fake.wait_sent(6)
        last = llm.requests[1]
    assert sent[0].text.startswith("Commands:")
    assert [s.text for s in sent[1:]] == [
        "first",
        "Started a new conversation.",
        "unknown model 'gpt-9' for provider 'fake' (known: fake-model, fake-small) "
        "(pick one of those, or add it to models in [gateway])",
        "Model set to fake-small.",
        "fresh",
    ]
    assert last.body["model"] == "fake-small"
    assert "remember 42" not in [m.get("content") for m in last.messages]


async def test_stop_cancels_the_turn_and_a_busy_conversation_says_so(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    stalled = FakeReply(text="thinking very hard about it", hang_at=2)
    with FakeLLMServer([stalled, "after the stop"]) as llm:
        configure(home, llm, url, "queue = 1")
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "a hard question")
            await asyncio.to_thread(llm.wait_for_requests, 1)
            await fake.message(ANN, "queued behind it")
            await fake.message(ANN, "one too many")
            await fake.wait_sent(1)
            await fake.message(ANN, "/stop")
            await fake.wait_sent(3)
            await fake.message(ANN, "next")  # queued if the stopped turn is still ending
            sent = await fake.wait_sent(4)
        prompts = [r.messages[-1]["content"] for r in llm.requests]
    assert sent[0].text.startswith("Busy with your earlier messages")
    assert sorted(s.text for s in sent[1:3]) == ["Stopped.", "Stopping."]
    assert sent[3].text == "after the stop"
    assert prompts == ["a hard question", "next"]  # /stop dropped the queued message


async def test_the_gateways_own_model_is_used(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["small talk"]) as llm:
        configure(home, llm, url, 'model = "fake-small"')
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "hi")
            await fake.wait_sent(1)
        assert llm.requests[0].body["model"] == "fake-small"
