"""The terminal UI through Textual's pilot, against FakeLLMServer and the real runtime:
streaming, tool items, notices, the footer and the input keys."""

from __future__ import annotations

from pathlib import Path

from openheim.runtime import SessionOptions
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.items import AnswerItem, NoticeItem, ToolItem, UserItem
from tests.tui.conftest import MakeApp
from tests.tui.drive import lines, running, send, settle, shown_text, wait_for


async def test_a_streamed_answer_is_markdown(make_app: MakeApp, server: FakeLLMServer) -> None:
    server.add(FakeReply(chunks=["# Title\n\n", "Some ", "`code` and ", "**bold**."]))
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "hello")
        [answer] = app.conversation.query(AnswerItem)
        assert answer.text == "# Title\n\nSome `code` and **bold**."
        shown = shown_text(answer)
        assert "Title" in shown and "Some code and bold." in shown and "**" not in shown
        assert lines(app, UserItem) == ["> hello"]
        assert "fake/fake-model" in app.status_bar.line()
        assert " ctx" in app.status_bar.line()
    assert server.requests[0].body["messages"][-1]["content"] == "hello"


async def test_tool_items_show_status_and_result(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    (work / "a.txt").write_text("alpha\n")
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "a.txt"})]),
        FakeReply(tool_calls=[FakeToolCall("write_file", {"path": "b.txt", "content": "new\n"})]),
        "done",
    )
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "read it")
        read, write = app.conversation.query(ToolItem)
        assert (read.tool, read.key, read.status) == ("read_file", "a.txt", "completed")
        assert read.title == "✓ read_file a.txt"
        assert read.collapsed and write.collapsed
        assert read.query_one(".tool-result").size.height == 0  # hidden until expanded
        shown = "".join(str(w.render()) for w in read.query(".tool-result"))
        assert "alpha" in shown
        read.collapsed = False  # expanded: the arguments and the result take their room
        await pilot.pause()
        [result] = read.query(".tool-result")
        await wait_for(pilot, lambda: result.size.height >= 1, "the expanded result")
        assert "alpha" in shown_text(result)
        assert write.query(".diff"), "a file edit shows its diff"
        await send(pilot, app, ":verbose")
        assert not read.display and not write.display
        assert "tool items hidden" in lines(app, NoticeItem)[-1]


async def test_a_first_prompt_is_sent_at_once(make_app: MakeApp, server: FakeLLMServer) -> None:
    server.add("right away")
    app = make_app(first="start here")
    async with running(app) as pilot:
        await wait_for(pilot, lambda: bool(app.conversation.query(AnswerItem)), "the answer")
        await settle(pilot, app)
        assert lines(app, UserItem) == ["> start here"]
    assert server.requests[0].body["messages"][-1]["content"] == "start here"


async def test_a_session_that_cannot_open_ends_the_app_with_its_error(make_app: MakeApp) -> None:
    app = make_app(options=SessionOptions(resume="nosuchsession"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None, "the app to end")
    assert app.return_code == 2
    assert app.failure is not None and app.failure.startswith("openheim: error: ")
    assert "nosuchsession" in app.failure


async def test_a_first_run_without_system_md_shows_no_notice(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    """A fresh data dir has no system.md; that is the normal state, not something to notice."""
    server.add("hi there")
    app = make_app()
    (home / "system.md").unlink()
    async with running(app) as pilot:
        await send(pilot, app, "hello")
        assert [item.text for item in app.conversation.query(AnswerItem)] == ["hi there"]
        assert lines(app, NoticeItem) == []
