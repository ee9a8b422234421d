"""The gateway through platform outages and a stop in the middle of a turn: nothing it has
acknowledged is lost, and the conversation's session stays valid."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.support import running
from tests.gateway.test_telegram import ANN, ENV, configure


async def test_an_outage_is_retried_until_the_platform_answers(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["made it"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            fake.outage = {"getUpdates": 1, "sendMessage": 2}
            await fake.message(ANN, "through the storm")
            sent = await fake.wait_sent(1)
    assert [s.text for s in sent] == ["made it"]
    assert fake.outage == {"getUpdates": 0, "sendMessage": 0}


async def test_a_stop_mid_turn_is_answered_at_the_next_start(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    stalled = FakeReply(text="half an answer that never ends", hang_at=2)
    with FakeLLMServer([stalled, "the full answer", "still the same session"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "a question")
            await asyncio.to_thread(llm.wait_for_requests, 1)
        assert fake.sent == []  # stopped before it answered, after acknowledging the update
        async with running(home, work, ("telegram",), ENV):
            first = await fake.wait_sent(1)
            await fake.message(ANN, "and a follow-up")
            sent = await fake.wait_sent(2)
        follow_up = [m.get("content") for m in llm.requests[2].messages]
    assert first[0].text == "the full answer"
    assert [s.text for s in sent] == ["the full answer", "still the same session"]
    assert "a question" in follow_up and "the full answer" in follow_up
