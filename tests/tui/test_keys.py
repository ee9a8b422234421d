"""Keys of the UI: Ctrl+C cancels and twice quits, the input keys, history and the file
picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.worker import WorkerFailed

from openheim.chat.history import FILE
from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply
from openheim.tui.items import NoticeItem, UserItem
from openheim.tui.pickers import Picker
from tests.tui.conftest import MakeApp
from tests.tui.drive import lines, running, send, settle, type_line, wait_for


async def test_ctrl_c_cancels_the_turn_and_twice_quits(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(FakeReply(text="never finished " * 5, hang_at=3), "second answer")
    app = make_app()
    async with running(app) as pilot:
        await type_line(pilot, app, "go")
        await wait_for(pilot, lambda: len(server.requests) == 1 and app.busy, "the turn")
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        assert "stopped: cancelled" in " ".join(lines(app, NoticeItem))
        assert "press Ctrl+C again to quit" in app.status_bar.line()
        await send(pilot, app, "again")  # the history stayed valid: the session goes on
        assert app.conversation.children[-1].text == "second answer"  # type: ignore[attr-defined]
        sent = server.requests[1].body["messages"]
        assert [m["role"] for m in sent][-3:] == ["user", "assistant", "user"]
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0
    assert app.chat._session is None  # closed: its lease released


async def test_enter_sends_newline_keys_insert_and_ctrl_u_clears(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add("ok")
    app = make_app()
    async with running(app) as pilot:
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert app.prompt_input.text == "a\nb\nc"
        await pilot.press("ctrl+u")
        assert app.prompt_input.text == ""
        await pilot.press("h", "i", "ctrl+j", "t", "h", "e", "r", "e", "enter")
        await settle(pilot, app)
        assert lines(app, UserItem) == ["> hi\nthere"]
    assert server.requests[0].body["messages"][-1]["content"] == "hi\nthere"


async def test_history_walks_with_up_and_down_and_persists(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    server.add("one", "two")
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "first")
        await send(pilot, app, "second")
        await pilot.press("d", "r", "a", "f", "t", "up")
        assert app.prompt_input.text == "second"
        await pilot.press("up")
        assert app.prompt_input.text == "first"
        await pilot.press("down", "down")
        assert app.prompt_input.text == "draft"
    assert (home / FILE).read_text().splitlines() == ['"first"', '"second"']


async def test_at_opens_the_file_picker_and_inserts_a_mention(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    (work / "src").mkdir()
    (work / "src" / "main.py").write_text("print('pineapple')\n")
    (work / "build.log").write_text("ignored\n")
    (work / ".gitignore").write_text("*.log\n")
    (work / ".env").write_text("TOKEN=1\n")
    server.add("seen")
    app = make_app()
    async with running(app) as pilot:
        await pilot.press("r", "e", "a", "d", "space", "@")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the file picker")
        picker = app.screen
        assert isinstance(picker, Picker)
        offered = [value for value, _ in picker.choices]
        assert "src/main.py" in offered and ".gitignore" in offered
        assert "build.log" not in offered and ".env" not in offered
        await pilot.press("m", "a", "i", "n", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, Picker), "the picker to close")
        assert app.prompt_input.text == "read @src/main.py "
        await pilot.press("enter")
        await settle(pilot, app)
    content = server.requests[0].body["messages"][-1]["content"]
    assert '<file path="src/main.py">' in content and "pineapple" in content


async def test_tab_completes_commands_and_paths(make_app: MakeApp, work: Path) -> None:
    (work / "notes.txt").write_text("x\n")
    app = make_app()
    async with running(app) as pilot:
        await pilot.press(":", "t", "h", "tab")
        assert app.prompt_input.text == ":theme"
        await pilot.press("ctrl+u", "s", "e", "e", "space")
        app.prompt_input.insert("@no")
        await pilot.press("tab")
        assert app.prompt_input.text == "see @notes.txt"


async def test_j_k_and_page_keys_scroll_the_conversation(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add("\n\n".join(f"paragraph {n}" for n in range(60)))
    app = make_app()
    async with running(app, (60, 20)) as pilot:
        await send(pilot, app, "a long answer")
        view = app.conversation
        await wait_for(pilot, lambda: view.max_scroll_y > 10, "the answer to overflow")
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y, "the end shown")
        await pilot.press("pageup")
        await wait_for(pilot, lambda: view.scroll_y < view.max_scroll_y, "PgUp to scroll")
        after_page = view.scroll_y
        view.focus()
        await pilot.press("k", "k")
        await wait_for(pilot, lambda: view.scroll_y < after_page, "k to scroll up")
        up = view.scroll_y
        await pilot.press("j")
        await wait_for(pilot, lambda: view.scroll_y > up, "j to scroll down")
        await pilot.press("escape")
        assert app.focused is app.prompt_input


async def test_a_crash_closes_the_session_and_releases_its_lease(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    server.add(FakeReply(text="never shown " * 5, hang_at=3))
    app = make_app()

    async def broken(event: object) -> None:
        raise RuntimeError("a bug in the view")

    with pytest.raises(WorkerFailed, match="a bug in the view"):
        async with running(app) as pilot:
            session_id = app.chat.session.id
            app.conversation.show = broken  # type: ignore[method-assign]
            await type_line(pilot, app, "go")
            await wait_for(pilot, lambda: app.return_code is not None, "the crash")
    assert session_id is not None and app.chat._session is None
    store = open_store(home)
    try:
        with store.acquire(session_id):  # not held by the crashed prompt any more
            pass
    finally:
        store.close()


async def test_tab_completes_skill_theme_and_model_names(make_app: MakeApp, home: Path) -> None:
    (home / "skills").mkdir()
    (home / "skills" / "review.md").write_text("Look for bugs.\n")
    app = make_app()
    async with running(app) as pilot:
        for typed, done in [
            (":skill re", ":skill review"),
            ("/theme nor", "/theme nord"),
            (":models fake/fake-l", ":models fake/fake-large"),
        ]:
            app.prompt_input.load_text(typed)
            app.prompt_input.move_cursor(app.prompt_input.document.end)
            await pilot.press("tab")
            assert app.prompt_input.text == done
