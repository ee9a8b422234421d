"""What the conversation shows: thinking as an open block, notices (retries with their delay, an
abnormal stop), the busy footer, pasted text, narrow terminals and resizes."""

from __future__ import annotations

import dataclasses

from textual import events

from openheim.events import (
    ContextTrimmed,
    Failed,
    FileDiff,
    Finished,
    Notice,
    RetryNotice,
    TextDelta,
)
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.items import (
    AnswerItem,
    NoticeItem,
    ThinkingItem,
    ToolItem,
    block_end,
    diff_text,
    key_argument,
)
from openheim.tui.pickers import Picker
from openheim.tui.view import event_line
from tests.tui.conftest import MakeApp
from tests.tui.drive import lines, running, send, settle, shown_text, type_line, wait_for


async def test_thinking_is_an_open_block(make_app: MakeApp, server: FakeLLMServer) -> None:
    server.add(FakeReply(reasoning="let me think about it", text="answer"))
    app = make_app()
    async with running(app) as pilot:
        await send(pilot, app, "think")
        [thinking] = app.conversation.query(ThinkingItem)
        assert not thinking.collapsed and thinking.text == "let me think about it"
        assert [a.text for a in app.conversation.query(AnswerItem)] == ["answer"]


async def test_a_retry_and_an_abnormal_stop_are_lines(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    call = FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": "."})])
    server.add(FakeReply(status=429, retry_after=0.01), call, call)
    app = make_app()
    app.settings = dataclasses.replace(app.settings, max_iterations=2)
    async with running(app) as pilot:
        await send(pilot, app, "loop")
        shown = lines(app, NoticeItem)
    assert any(line.startswith("retrying in 0.0 s (attempt 1") for line in shown)
    assert any(line.startswith("stopped: max_turn_requests") for line in shown)


async def test_the_footer_is_busy_with_tokens_per_second(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(FakeReply(chunks=["slow "] * 12, chunk_delay=0.05))
    app = make_app()
    async with running(app) as pilot:
        await type_line(pilot, app, "go")
        await wait_for(pilot, lambda: "tok/s" in app.status_bar.line(), "the busy footer")
        assert app.status_bar.streamed_chars > 0 or app.busy
        await settle(pilot, app)
        assert "tok/s" not in app.status_bar.line()


async def test_a_paste_inserts_lines_and_esc_closes_a_picker(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app) as pilot:
        app.post_message(events.Paste("first line\nsecond line"))  # as a terminal sends it
        await pilot.pause()
        assert app.prompt_input.text == "first line\nsecond line"
        await type_line(pilot, app, ":models")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker), "the picker")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, Picker), "the picker to close")


async def test_a_narrow_terminal_wraps_and_a_resize_reflows(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    words = "a narrow terminal wraps every long line of the answer " * 4
    server.add(words.strip())
    app = make_app()
    async with running(app, (40, 20)) as pilot:
        await send(pilot, app, "say it")
        [answer] = app.conversation.query(AnswerItem)
        narrow = [line for line in shown_text(answer).splitlines() if line]
        assert len(narrow) >= 5 and all(len(line) <= 40 for line in narrow)
        await pilot.resize_terminal(120, 20)
        await pilot.pause()
        wide = [line for line in shown_text(answer).splitlines() if line]
        assert len(wide) < len(narrow)
        assert " ".join(wide).split() == words.split()


def test_event_lines() -> None:
    assert event_line(ContextTrimmed(12, 40)) == (
        "left 12 of 40 older messages out to fit the context window",
        "info",
    )
    assert event_line(Notice("server x unavailable", "warning", "mcp")) == (
        "openheim: server x unavailable",
        "warning",
    )
    assert event_line(RetryNotice(2, 1.5, "HTTP 529", 3)) == (
        "retrying in 1.5 s (attempt 2 of 3): HTTP 529",
        "retry",
    )
    assert event_line(Failed("boom")) == ("error: boom", "error")
    assert event_line(Finished("end_turn")) is None
    assert event_line(Finished("end_turn", denied=2)) == (
        "2 tool calls were denied; the answer above may describe work that was refused",
        "warning",
    )
    assert event_line(Finished("refusal", "content_filter")) == (
        "stopped: refusal (content_filter)",
        "stop",
    )


def test_key_arguments_and_diffs() -> None:
    assert key_argument({"command": "ls -la\nrm x", "path": ""}) == "ls -la"
    assert key_argument({"content": "x"}) == ""
    assert key_argument({"path": "a" * 100}).endswith("…")
    diff = diff_text(FileDiff("/w/a.txt", "one\n", "two\n"))
    assert "-one" in diff and "+two" in diff and "a/a.txt" in diff


def test_parts_are_cut_at_block_ends_outside_code_fences() -> None:
    para = "word " * 100 + "\n\n"  # 502 characters, then a blank line
    assert block_end("short\n\n") is None
    assert block_end(para + "more") == len(para)
    fenced = "```\n" + "code\n\n" * 90 + "```\n"
    assert block_end(fenced) is None  # every blank line is inside the fence
    assert block_end(fenced + "\n\nafter") == len(fenced) + 2


def test_a_tool_title_shows_its_status_and_is_not_markup() -> None:
    item = ToolItem("c1", "shell", {"command": "echo [bold]hi[/bold]"})
    assert item.title == "⋯ shell echo \\[bold]hi\\[/bold] (running)"


async def test_deltas_faster_than_a_frame_are_drawn_together(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app) as pilot:
        view = app.conversation
        for n in range(50):
            await view.show(TextDelta(f"word{n} "))
        [answer] = view.query(AnswerItem)
        drawn = " ".join(answer._live.texts)
        assert drawn.split() == ["word0"]  # the first delta drew; the rest wait for a frame
        await wait_for(pilot, lambda: answer._live.texts[0].split()[-1] == "word49", "a frame")
        await view.show(TextDelta("last"))
        view.end_stream()  # draws what is held back at once
        assert answer._live.texts[0].endswith("word49 last")


async def test_the_view_follows_deltas_drawn_after_a_frame(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app, (60, 20)) as pilot:
        view = app.conversation
        await view.show(TextDelta("first paragraph\n\n"))  # drawn at once
        for n in range(60):  # within a frame: drawn together, later
            await view.show(TextDelta(f"paragraph {n}\n\n"))
        await wait_for(pilot, lambda: view.max_scroll_y > 10, "the answer to overflow")
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y, "the end shown")
        view.scroll_page_up(animate=False)
        await wait_for(pilot, lambda: view.scroll_y < view.max_scroll_y, "PgUp to scroll")
        up = view.scroll_y
        await view.show(TextDelta("more\n\n" * 5))
        view.end_stream()
        await wait_for(pilot, lambda: view.max_scroll_y > up + 5, "the answer to grow")
        assert view.scroll_y == up  # scrolled up by the user: the view stays where it is
