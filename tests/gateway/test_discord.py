"""Discord end to end: the gateway connects to a fake gateway WebSocket and REST API on
loopback and answers with ``FakeLLMServer`` as the model."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from openheim.errors import PlatformError
from openheim.gateway.format import render
from openheim.gateway.service import serve
from openheim.testing import FakeLLMServer
from tests.gateway.fake_discord import BOT_ID, TOKEN, FakeDiscord
from tests.gateway.support import running, settings_for, write_config

ANN = "300000000000000042"
DM = "500000000000000001"
ENV = {"DC_TOKEN": TOKEN}


def configure(home: Path, llm: FakeLLMServer, fake: FakeDiscord) -> None:
    api = fake.ws_url.replace("ws://", "http://").replace("/gateway", "/api/v10")
    write_config(
        home,
        llm,
        f'[gateway.discord]\ntoken = "env:DC_TOKEN"\napi_base = "{api}"\n'
        f'gateway_url = "{fake.ws_url}"\nallowed_users = ["{ANN}"]\n',
    )


async def test_a_conversation_in_direct_messages(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    with FakeLLMServer(["Hi Ann", "Still here"]) as llm:
        configure(home, llm, discord)
        async with running(home, work, ("discord",), ENV):
            await discord.wait("ready", lambda: discord.identifies == 1)
            await discord.message(ANN, DM, "hello")
            await discord.wait_created(1)
            await discord.message(ANN, DM, "again")
            created = await discord.wait_created(2)
            await discord.wait("heartbeat", lambda: discord.heartbeats >= 1)
        texts = [m.get("content") for m in llm.requests[1].messages]
    assert [c.content for c in created] == ["Hi Ann", "Still here"]
    assert all(c.channel == DM and c.allowed_mentions == {"parse": []} for c in created)
    assert created[0].reply_to == discord.events[1]["d"]["id"]
    assert "hello" in texts and "Hi Ann" in texts


async def test_in_a_server_only_a_mention_is_answered(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    with FakeLLMServer(["answered"]) as llm:
        configure(home, llm, discord)
        async with running(home, work, ("discord",), ENV):
            await discord.wait("ready", lambda: discord.identifies == 1)
            await discord.message(ANN, "600", "talking among ourselves", guild=True)
            await discord.message(ANN, "600", f"<@{BOT_ID}> what is 2+2?", guild=True)
            created = await discord.wait_created(1)
        prompt = llm.requests[0].messages[-1]["content"]
    assert [(c.channel, c.content) for c in created] == [("600", "answered")]
    assert prompt == "what is 2+2?"
    assert len(llm.requests) == 1


async def test_a_dropped_connection_is_resumed_without_losing_a_message(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    with FakeLLMServer(["before", "after"]) as llm:
        configure(home, llm, discord)
        async with running(home, work, ("discord",), ENV):
            await discord.wait("ready", lambda: discord.identifies == 1)
            await discord.message(ANN, DM, "one")
            await discord.wait_created(1)
            seen = len(discord.events)
            await discord.drop()
            await discord.message(ANN, DM, "sent while it was away")
            created = await discord.wait_created(2)
    assert [c.content for c in created] == ["before", "after"]
    assert discord.identifies == 1 and discord.resumes == [seen]
    assert discord.events[-1]["t"] == "RESUMED"


async def test_a_reconnect_request_is_followed_by_a_resume(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    with FakeLLMServer(["moved"]) as llm:
        configure(home, llm, discord)
        async with running(home, work, ("discord",), ENV):
            await discord.wait("ready", lambda: discord.identifies == 1)
            seen = len(discord.events)
            await discord.ask_to_reconnect()
            await discord.message(ANN, DM, "are you back?")
            created = await discord.wait_created(1)
    assert [c.content for c in created] == ["moved"]
    assert discord.identifies == 1 and discord.resumes == [seen]


async def test_mentions_are_made_inert_and_long_replies_split_at_2000(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    prose = " ".join(f"word{i}" for i in range(300))
    code = "\n".join(f"    line_{i} = {i}" for i in range(120))
    pings = "@everyone and @here, see <@123456> and <@!77> in <#88>."
    reply = f"{pings}\n\n{prose}\n\n```python\n{code}\n```\n{prose}"
    with FakeLLMServer([reply]) as llm:
        configure(home, llm, discord)
        async with running(home, work, ("discord",), ENV):
            await discord.wait("ready", lambda: discord.identifies == 1)
            await discord.message(ANN, DM, "go")
            created = await discord.wait_created(len(render("discord", reply)))
    chunks = [c.content for c in created]
    assert all(len(chunk) <= 2000 for chunk in chunks)
    joined = "\n".join(chunks)
    assert re.search(r"@(everyone|here)\b", joined) is None
    assert re.search(r"<[@#]!?\d+>", joined) is None
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0, chunk  # every block closed where it is cut
    words = re.findall(r"word\d+", joined)
    assert words == [f"word{i}" for i in range(300)] * 2  # no word broken or lost
    lines = re.findall(r"line_\d+ = \d+", joined)
    assert lines == [f"line_{i} = {i}" for i in range(120)]


async def test_a_refused_token_ends_the_gateway(
    home: Path, work: Path, discord: FakeDiscord
) -> None:
    with FakeLLMServer([]) as llm:
        configure(home, llm, discord)
        run = serve(settings_for(home, work), ["discord"], {"DC_TOKEN": "not-the-token"})
        with pytest.raises(PlatformError) as raised:
            await asyncio.wait_for(run, 10)
    assert str(raised.value).startswith("Discord: the bot token was refused (close code 4004)")
    assert discord.identifies == 0
