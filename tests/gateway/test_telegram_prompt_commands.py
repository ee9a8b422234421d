"""Skill and template commands sent in a chat reach the model expanded, the same request the
REPL sends (``tests/prompt_commands.py``); a template missing its argument and an unknown
command are answered, not sent to the model."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.support import running
from tests.gateway.test_telegram import ANN, ENV, configure
from tests.prompt_commands import SENT, TYPED, install


async def test_skill_and_template_messages_are_expanded(
    home: Path, work: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    install(home)
    with FakeLLMServer(["one", "two"]) as llm:
        configure(home, llm, url)
        async with running(home, work, ("telegram",), ENV):
            for count, text in enumerate([*TYPED, "/fix no lang", "/hepl", "/help"], 1):
                await fake.message(ANN, text)
                sent = await fake.wait_sent(count)
        requests = [r.body["messages"][-1]["content"] for r in llm.requests]
    assert requests == list(SENT)
    assert [s.text for s in sent[:2]] == ["one", "two"]
    assert "needs the argument lang" in sent[2].text
    assert sent[3].text == "unknown command /hepl; did you mean /help? (/help lists them)"
    assert sent[4].text.startswith("Commands:")
    assert "skills and templates as commands: /fix, /review" in sent[4].text
