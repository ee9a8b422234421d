"""Every chat command in the UI, through the pilot and the real runtime."""

from __future__ import annotations

import functools
from pathlib import Path

from openheim.chat.history import history_for
from openheim.memory.setup import open_memory
from openheim.messages import Message
from openheim.runtime import SessionOptions
from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.app import ChatApp
from openheim.tui.items import AnswerItem, NoticeItem, ToolItem, UserItem
from openheim.tui.pickers import Picker
from openheim.tui.view import PAGE
from tests.tui.conftest import MakeApp, load
from tests.tui.drive import lines, running, send, settle, type_line, wait_for


def said(app: ChatApp) -> str:
    """The last line the conversation shows."""
    return lines(app, NoticeItem)[-1]


async def test_help_unknown_clear_and_quit(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "/help")
        assert ":sessions" in said(app) and "Ctrl+C" in said(app)
        await send(pilot, app, ":modles")
        assert said(app) == "unknown command :modles; did you mean :models? (:help lists them)"
        await send(pilot, app, ":clear")
        assert not app.conversation.children
        await type_line(pilot, app, ":q")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to quit")


async def test_restore_replays_the_conversation_with_tool_items(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    (work / "a.txt").write_text("alpha\n")
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "a.txt"})]),
        "It says alpha.",
        "new session answer",
        "restored answer",
    )
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "what is in a.txt?")
        first_id = app.chat.session.id
        await send(pilot, app, ":new")
        assert app.chat.session.id != first_id and not app.conversation.query(UserItem)
        await send(pilot, app, "hello")
        await type_line(pilot, app, ":sessions")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the sessions picker")
        await pilot.press(*"what is")  # filter to the first session's title
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.chat.session.id == first_id
        assert lines(app, UserItem) == ["> what is in a.txt?"]
        [tool] = app.conversation.query(ToolItem)
        assert (tool.tool, tool.status) == ("read_file", "completed")
        assert [a.text for a in app.conversation.query(AnswerItem)] == ["It says alpha."]
        await send(pilot, app, "and then?")
    sent = server.requests[-1].body["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users == ["what is in a.txt?", "and then?"]


async def test_restore_warns_when_the_provider_is_gone(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    server.add("one", "two")
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "hi")
        session_id = app.chat.session.id
        assert session_id is not None
        store_path = home / "openheim.db"
        assert store_path.exists()
        store = open_store(home)
        store.update(session_id, provider="vanished")
        store.close()
        await send(pilot, app, f":sessions {session_id[:8]}")
        assert "provider 'vanished' is no longer configured" in " ".join(lines(app, NoticeItem))
        await send(pilot, app, "still works?")
    assert len(server.requests) == 2


async def test_theme_is_applied_and_kept_with_comments(
    make_app: MakeApp, home: Path, work: Path
) -> None:
    app = make_app(extra="# my comment\n")
    async with running(app) as pilot:
        await send(pilot, app, ":theme nord")
        assert app.theme == "nord"
        await send(pilot, app, ":theme nrod")
        assert "did you mean nord?" in said(app)
        await type_line(pilot, app, ":theme")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the theme picker")
        await pilot.press(*"gruvbox", "enter")
        await settle(pilot, app)
        assert app.theme == "gruvbox"
    text = (home / "config.toml").read_text()
    assert "# my comment" in text and 'theme = "gruvbox"' in text
    settings = load(home, work)
    assert settings.theme == "gruvbox"
    again = ChatApp(settings, SessionOptions(), history_for(home))
    assert again.theme == "gruvbox"  # a new start uses it


async def test_models_picker_and_switch(make_app: MakeApp, server: FakeLLMServer) -> None:
    server.add("from large", "from small")
    app = make_app()
    async with running(app) as pilot:
        await type_line(pilot, app, ":models")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the models picker")
        await pilot.press(*"large", "enter")
        await settle(pilot, app)
        assert "fake/fake-large" in app.status_bar.line()
        await send(pilot, app, "hi")
        await send(pilot, app, ":models fake-model")
        await send(pilot, app, "hi")
    assert [r.body["model"] for r in server.requests] == ["fake-large", "fake-model"]


async def test_info_commands(make_app: MakeApp, server: FakeLLMServer, home: Path) -> None:
    server.add("answer")
    extra = '[mcp_servers.broken]\ncommand = "/nonexistent/mcp-server"\n'
    app = make_app(extra=extra)
    async with running(app) as pilot:
        assert any("broken" in line for line in lines(app, NoticeItem))  # shown at start
        await send(pilot, app, "hi")
        await send(pilot, app, ":cost")
        assert said(app).startswith("tokens: ")
        await send(pilot, app, ":config")
        assert "approval = 'auto'" in said(app) and "[providers.fake]" in said(app)
        await send(pilot, app, ":mcp")
        assert said(app).startswith("broken: unavailable")
        with open_memory(app.chat.settings) as memory:
            await memory.remember("the user likes green tea")
        await send(pilot, app, ":memory")
        assert said(app) == "#1 the user likes green tea"
        await send(pilot, app, ":memory coffee")
        assert said(app) == "no memories match 'coffee'"
        await send(pilot, app, ":export chat.md")
        assert said(app).startswith("exported to ")
    exported = (app.chat.settings.work_dir / "chat.md").read_text()
    assert "hi" in exported and "answer" in exported


async def test_skills_list_activate_and_slash_command(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    (home / "skills").mkdir()
    (home / "skills" / "review.md").write_text(
        '+++\ndescription = "Review code"\n+++\nLook for bugs first.\n'
    )
    server.add("reviewed", "again")
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, ":skills")
        assert said(app) == "review: Review code"
        await send(pilot, app, "/review main.py")
        await send(pilot, app, ":skill review")
        assert said(app) == "skill review is active"
        await send(pilot, app, ":skill nope")
        assert "there is no skill named 'nope'" in said(app)
        await send(pilot, app, ":agent")
        assert "agent needs a name" in said(app)
        await send(pilot, app, "next")
    first = server.requests[0].body["messages"][-1]["content"]
    assert first.startswith('<skill name="review">') and first.endswith("main.py")
    system = server.requests[1].body["messages"][0]["content"]
    assert "Look for bugs first." in system


async def test_a_long_session_replays_a_page_at_a_time(make_app: MakeApp, home: Path) -> None:
    app = make_app()
    store = open_store(home)
    record = store.create(cwd=str(app.settings.work_dir), provider="fake", model="fake-model")
    for n in range(100):  # 200 items: 100 prompts and 100 answers
        store.append(record.id, Message.user(f"question {n}"))
        store.append(record.id, Message.assistant(f"answer {n}"))
    store.close()
    async with running(app) as pilot:
        await send(pilot, app, f":sessions {record.id}")
        shown = lines(app, UserItem)
        assert shown[0] == f"> question {100 - PAGE // 2}" and shown[-1] == "> question 99"
        assert f"↑ {200 - PAGE} earlier items" in lines(app, NoticeItem)[0]
        view = app.conversation

        def scrolled_up(prompts: int) -> bool:
            view.scroll_home(animate=False)  # at the top, a page of earlier items comes
            return len(view.query(UserItem)) == prompts

        for prompts in (PAGE, PAGE * 3 // 2, 100):
            await wait_for(pilot, functools.partial(scrolled_up, prompts), f"{prompts} shown")
        assert lines(app, UserItem)[0] == "> question 0"
        await wait_for(pilot, lambda: view.marker is None, "the marker to go")
        assert not view.earlier
