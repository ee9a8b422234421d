"""A gateway conversation keeps one open session across its messages: its MCP servers start
and its ``session_start`` hook runs once per conversation, not once per message."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from openheim.store import open_store
from openheim.testing import FakeLLMServer
from tests.gateway.fake_telegram import TOKEN, FakeTelegram
from tests.gateway.support import running, write_config
from tests.mcp.conftest import SERVER

ANN = 111
ENV = {"TG_TOKEN": TOKEN}


def configure(home: Path, llm: FakeLLMServer, url: str, logs: Path, extra: str = "") -> None:
    """The fake model, a stdio MCP server that notes each start, and hooks that note each
    session's start and end, in ``logs``."""
    starts, hooks = shlex.quote(str(logs / "mcp")), shlex.quote(str(logs / "hooks"))
    server = f"echo start >> {starts}; exec {shlex.quote(sys.executable)} {shlex.quote(SERVER)}"
    write_config(
        home,
        llm,
        f'[hooks]\nsession_start = "echo start >> {hooks}"\n'
        f'session_end = "echo end >> {hooks}"\n\n'
        f'[mcp_servers.probe]\ncommand = "sh"\nargs = ["-c", {server!r}]\n\n'
        f'[gateway]\n{extra}\n[gateway.telegram]\ntoken = "env:TG_TOKEN"\n'
        f'api_base = "{url}"\nallowed_users = ["{ANN}"]\n',
    )


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


async def test_five_messages_start_the_mcp_server_and_session_start_once(
    home: Path, work: Path, tmp_path: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    answers = [f"answer {i}" for i in range(5)]
    with FakeLLMServer(list(answers)) as llm:
        configure(home, llm, url, tmp_path)
        async with running(home, work, ("telegram",), ENV):
            for i in range(5):
                await fake.message(ANN, f"message {i}")
                await fake.wait_sent(i + 1)
            assert lines(tmp_path / "hooks") == ["start"]  # still open between messages
        last = [m.get("content") for m in llm.requests[-1].messages]
    assert [s.text for s in fake.sent] == answers
    assert "message 0" in last and "answer 3" in last  # one session went on throughout
    offered = [t["function"]["name"] for t in llm.requests[-1].body["tools"]]
    assert any(name.endswith("echo") for name in offered)  # the MCP server's tools, offered
    assert lines(tmp_path / "mcp") == ["start"]
    assert lines(tmp_path / "hooks") == ["start", "end"]  # closed when the gateway stopped


async def test_new_closes_the_conversations_session_and_opens_another(
    home: Path, work: Path, tmp_path: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["one", "two", "three"]) as llm:
        configure(home, llm, url, tmp_path)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "first")
            await fake.wait_sent(1)
            await fake.message(ANN, "second")
            await fake.wait_sent(2)
            await fake.message(ANN, "/new")
            await fake.wait_sent(3)
            await fake.message(ANN, "third")
            await fake.wait_sent(4)
        after_new = [m.get("content") for m in llm.requests[-1].messages]
    assert "third" in after_new and "first" not in after_new
    assert lines(tmp_path / "mcp") == ["start", "start"]
    assert lines(tmp_path / "hooks") == ["start", "end", "start", "end"]


async def test_a_model_change_resumes_the_conversation_s_session_with_that_model(
    home: Path, work: Path, tmp_path: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["one", "two"]) as llm:
        configure(home, llm, url, tmp_path, 'models = ["fake-model", "fake-small"]')
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "first")
            await fake.wait_sent(1)
            await fake.message(ANN, "/model fake-small")
            await fake.wait_sent(2)
            await fake.message(ANN, "second")
            await fake.wait_sent(3)
        last = llm.requests[-1]
    assert last.body["model"] == "fake-small"
    assert "first" in [m.get("content") for m in last.messages]  # the same stored session
    assert lines(tmp_path / "hooks") == ["start", "end", "start", "end"]


async def test_a_session_deleted_while_open_is_replaced_by_a_new_one(
    home: Path, work: Path, tmp_path: Path, telegram: tuple[FakeTelegram, str]
) -> None:
    fake, url = telegram
    with FakeLLMServer(["one", "two"]) as llm:
        configure(home, llm, url, tmp_path)
        async with running(home, work, ("telegram",), ENV):
            await fake.message(ANN, "first")
            await fake.wait_sent(1)
            store = open_store(home)
            [record] = store.list()
            store.delete(record.id)  # `openheim sessions delete` meanwhile
            store.close()
            await fake.message(ANN, "second")
            sent = await fake.wait_sent(2)
        texts = [m.get("content") for m in llm.requests[-1].messages]
    assert [s.text for s in sent] == ["one", "two"]
    assert "second" in texts and "first" not in texts
