"""What the UI shows around the conversation: the welcome line, the ``/`` palette, Ctrl+C on a
draft, the elapsed-time and cost ticker, empty sessions left unstored, the current model
marked, fast typing after ``@`` and the session to resume after quitting."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.pilot import Pilot

from openheim.chat.history import history_for
from openheim.runtime import SessionOptions
from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.app import ChatApp
from openheim.tui.items import NoticeItem, WelcomeItem
from openheim.tui.pickers import Picker
from tests.providers.test_windows import gguf
from tests.tui.conftest import MakeApp, load
from tests.tui.drive import lines, running, send, settle, type_line, wait_for
from tests.tui.support import configure


def stored(home: Path) -> list[tuple[str, int]]:
    """The stored sessions, newest first: id and message count."""
    store = open_store(home)
    try:
        return [(record.id, record.message_count) for record in store.list()]
    finally:
        store.close()


async def quit_app(pilot: Pilot[int], app: ChatApp) -> None:
    await type_line(pilot, app, ":quit")
    await wait_for(pilot, lambda: app.return_code is not None, "the app to quit")


def palette_names(app: ChatApp) -> list[str]:
    return [entry.name for entry in app.palette.shown] if app.palette.open else []


async def test_the_welcome_line_names_the_model_the_work_folder_and_help(
    make_app: MakeApp, work: Path
) -> None:
    app = make_app()
    async with running(app):
        first = lines(app, WelcomeItem)[0]
    assert "fake/fake-model" in first
    assert f"work folder {work}" in first
    assert "/help" in first


async def test_slash_lists_the_commands_filters_them_and_tab_completes(
    make_app: MakeApp, home: Path
) -> None:
    (home / "skills").mkdir()
    (home / "skills" / "review.md").write_text('+++\ndescription = "Review code"\n+++\nLook.\n')
    (home / "prompts").mkdir()
    (home / "prompts" / "fix.md").write_text("---\ndescription: Fix it\n---\nFix {{input}}")
    app = make_app()
    async with running(app) as pilot:
        assert not app.palette.display
        await pilot.press("/")
        shown = palette_names(app)
        assert shown[:3] == ["help", "quit", "new"]  # the registry, in help order
        assert shown[-2:] == ["review", "fix"]  # then the skills and the templates
        assert "theme" in shown and "auth" not in shown  # what this surface offers only
        await pilot.press("r", "e")
        assert palette_names(app) == ["review"]
        assert "skill: Review code" in str(app.palette.get_option_at_index(0).prompt)
        await pilot.press("backspace", "backspace", "m", "o")
        assert palette_names(app) == ["models"]  # its alias "model" names the same entry
        await pilot.press("tab")
        assert app.prompt_input.text == "/models "
        assert not app.palette.display  # an argument follows now: the palette is gone


async def test_enter_completes_the_highlighted_entry_and_sends_a_full_command(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with running(app) as pilot:
        await pilot.press("/", "c")
        assert palette_names(app) == ["config", "cost", "compact", "clear"]
        await pilot.press("down", "down", "up", "enter")
        assert app.prompt_input.text == "/cost "
        await pilot.press("ctrl+u", "/", "h", "e", "l", "p", "enter")  # typed out: it runs
        await settle(pilot, app)
        assert app.prompt_input.text == ""
        assert "these commands" in lines(app, NoticeItem)[-1]
        await pilot.press("/", "escape")
        assert not app.palette.display and app.prompt_input.text == "/"


async def test_ctrl_c_clears_a_draft_before_it_quits(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app) as pilot:
        await pilot.press("d", "r", "a", "f", "t", "ctrl+c")
        assert app.prompt_input.text == ""
        assert "again to quit" not in app.status_bar.line()
        await pilot.press("x", "ctrl+c", "ctrl+c")  # clear, then the first of two to quit
        assert app.return_code is None
        assert "press Ctrl+C again to quit" in app.status_bar.line()
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0


async def test_ctrl_c_cancels_a_running_turn_and_keeps_the_draft(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(FakeReply(text="never " * 5, hang_at=3))
    app = make_app()
    async with running(app) as pilot:
        await type_line(pilot, app, "go")
        await wait_for(pilot, lambda: len(server.requests) == 1 and app.busy, "the turn")
        await pilot.press("n", "e", "x", "t", "ctrl+c")
        await settle(pilot, app)
        assert "stopped: cancelled" in " ".join(lines(app, NoticeItem))
        assert app.prompt_input.text == "next"


async def test_the_footer_ticks_elapsed_time_and_cost_while_a_turn_runs(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    (work / "a.txt").write_text("alpha\n")
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "a.txt"})]),
        FakeReply(text="never " * 5, hang_at=3),
    )
    app = make_app(extra='[prices."fake-model"]\ninput = 1000.0\noutput = 1000.0\n')
    async with running(app) as pilot:
        await type_line(pilot, app, "go")
        await wait_for(pilot, lambda: len(server.requests) == 2, "the second model call")
        await wait_for(pilot, lambda: " 0s · " in app.status_bar.line(), "the ticker")
        assert "$" in app.status_bar.line()  # the first call's cost, while the turn runs
        await wait_for(pilot, lambda: " 1s · " in app.status_bar.line(), "a second later")
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        assert " 1s · " not in app.status_bar.line()


async def test_empty_sessions_are_not_kept_and_not_offered(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    server.add("hello")
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, ":new")
        await send(pilot, app, "hi")
        said = app.chat.session.id
        await send(pilot, app, ":new")  # an empty one is open now
        await type_line(pilot, app, ":sessions")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the session picker")
        assert isinstance(app.screen, Picker)
        assert [value for value, _ in app.screen.choices] == [said]
        await pilot.press("escape")
        await settle(pilot, app)
        await quit_app(pilot, app)
    assert stored(home) == [(said, 2)]
    assert app.resume_id is None  # the session open at the end had nothing in it


async def test_quitting_names_the_session_to_resume(
    make_app: MakeApp, server: FakeLLMServer, home: Path
) -> None:
    server.add("hello")
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "hi")
        said = app.chat.session.id
        await quit_app(pilot, app)
    assert app.resume_id == said and stored(home) == [(said, 2)]


async def test_quitting_an_empty_session_names_nothing_to_resume(
    make_app: MakeApp, home: Path
) -> None:
    app = make_app()
    async with running(app) as pilot:
        await quit_app(pilot, app)
    assert stored(home) == []
    assert app.resume_id is None


async def test_the_model_picker_marks_and_highlights_the_current_model(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, ":models fake-large")
        await type_line(pilot, app, ":models")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the model picker")
        picker = app.screen
        assert isinstance(picker, Picker)
        labels = dict(picker.choices)
        assert labels["fake/fake-large"] == "● fake/fake-large (current)"
        assert labels["fake/fake-model"] == "  fake/fake-model"
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.chat.session.model == "fake-large"


async def test_characters_typed_fast_after_at_go_to_the_picker(
    make_app: MakeApp, work: Path
) -> None:
    (work / "main.py").write_text("x\n")
    (work / "other.txt").write_text("y\n")
    app = make_app()
    async with running(app) as pilot:
        for character in "@mai":  # one burst, as a terminal delivers fast typing
            app.post_message(events.Key(character, character))
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the file picker")
        await pilot.press("n")
        assert app.prompt_input.text == "@"
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, Picker), "the pick")
        assert app.prompt_input.text == "@main.py "


async def test_the_footer_shows_a_local_models_own_context_window(
    home: Path, work: Path, server: FakeLLMServer, tmp_path: Path
) -> None:
    model = gguf(tmp_path / "small.gguf", 8192)
    mine = f'kind = "llama_cpp"\ndefault_model = "small"\nmodel_path = "{model}"'
    configure(home, server, extra=f"[providers.mine]\n{mine}")
    settings = load(home, work, approval="auto", work_dir=str(work), provider="mine")
    app = ChatApp(settings, SessionOptions(), history_for(home))
    async with running(app):
        assert "0 / 8.2k ctx" in app.status_bar.line()


async def test_switching_away_from_an_empty_session_keeps_nothing(
    make_app: MakeApp, home: Path
) -> None:
    (home / "skills").mkdir()
    (home / "skills" / "review.md").write_text('+++\ndescription = "Review code"\n+++\nLook.\n')
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, ":skill review")
        assert app.chat.options.skills == ("review",) and app.chat.session.id is not None
        await quit_app(pilot, app)
    assert stored(home) == []
