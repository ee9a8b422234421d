"""The terminal UI shows its work: the approval keys and why it asks, a rejection with a reason
for the model, thinking streamed open, the diff of an edit just allowed, the approval mode
cycled with Shift+Tab, and hints that name config keys that exist."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from openheim.approval import Ask
from openheim.events import ThinkingDelta
from openheim.runtime.approvals import EDITS_ASKS, MODE_ASKS, why_asked
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.app import ChatApp
from openheim.tui.items import ThinkingItem, ToolItem
from tests.tui.conftest import MakeApp
from tests.tui.drive import running, settle, shown_text, type_line, wait_for
from tests.tui.test_approvals import answer, asking, question, write_call

OPTIONS = [
    "[y] allow once",
    "[a] allow always",
    "[n] reject",
    "[r] reject always",
    "[t] no, and tell the model why",
]


async def test_every_option_shows_its_key_and_why_it_asks_is_dim(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        modal = await question(pilot, app, "write b.txt")
        await pilot.pause()
        choices = modal.query_one(OptionList)
        shown = [choices.render_line(y).text.strip() for y in range(choices.size.height)]
        assert [line for line in shown if line] == OPTIONS
        why = modal.query_one("#approval-why-asked", Static)
        assert shown_text(why) == MODE_ASKS
        line = why.render_line(0)
        assert all(s.style and s.style.dim for s in line if s.text.strip())  # dim text
        title = modal.query_one("#approval-title", Static)
        assert why.region.y == title.region.y + 1  # right below the title
        assert "no allow rule covers" not in shown_text(modal.query_one("#approval-box"))
        await pilot.press("n")
        await settle(pilot, app)


@pytest.mark.parametrize(
    ("ask", "why"),
    [
        (Ask("the approval mode is ask and no allow rule covers x", auto_allows=True), MODE_ASKS),
        (Ask("[subagent helper] the approval mode is ask", auto_allows=True), MODE_ASKS),
        (Ask("the approval mode is auto for edits", auto_allows=True, mode="edits"), EDITS_ASKS),
        (Ask("write_file may be risky", reasons=("writes .git/config",)), ""),
        (Ask("the pre_tool hook asks about write_file"), "the pre_tool hook asks about write_file"),
        (Ask("[subagent helper] the pre_tool hook asks"), "the pre_tool hook asks"),
        (Ask("hook says\n  key sk-ant-abcdefghijklmnopqrstuvwx"), "hook says key [REDACTED]"),
        (Ask(), ""),
    ],
)
def test_why_it_asks_in_plain_words(ask: Ask, why: str) -> None:
    assert why_asked(ask) == why


@pytest.mark.parametrize(
    ("keys", "told"),
    [
        (["t", *"use c.txt", "enter"], "the user rejected this tool call, saying: use c.txt"),
        (["down"] * 4 + ["enter", *"not now", "enter"], "saying: not now"),
        (["t", "enter"], "the user rejected this tool call"),
    ],
)
async def test_no_and_tell_the_model_why(
    make_app: MakeApp, server: FakeLLMServer, work: Path, keys: list[str], told: str
) -> None:
    server.add(write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        modal = await question(pilot, app, "write b.txt")
        for key in keys[:-1]:
            await pilot.press(key)
        assert modal.query_one(Input).has_focus  # the reason goes to the field
        await pilot.press(keys[-1])
        await settle(pilot, app)
    results = [m["content"] for m in server.requests[1].messages if m.get("role") == "tool"]
    assert told in results[0]
    assert not (work / "b.txt").exists()


def thinking_reply() -> FakeReply:
    # events: the role chunk, three thinking pieces, then it stalls before the answer
    return FakeReply(reasoning="weighing the options", text="done", hang_at=4)


@pytest.mark.parametrize("show", [True, False])
async def test_thinking_streams_open_and_counts_in_the_rate(
    make_app: MakeApp, server: FakeLLMServer, show: bool
) -> None:
    server.add(thinking_reply())
    extra = "" if show else "[tui]\nshow_thinking = false"
    app = make_app(extra=extra)
    async with running(app) as pilot:
        await type_line(pilot, app, "think")
        await wait_for(pilot, lambda: app.status_bar.streamed_chars >= 20, "the thinking")
        [item] = app.conversation.query(ThinkingItem)
        assert item.text == "weighing the options"
        assert item.display is show
        assert not item.collapsed
        if show:
            await wait_for(pilot, lambda: "weighing the options" in shown_text(item), "drawn")
        assert app.status_bar.rate() > 0
        assert " 0 tok/s" not in app.status_bar.line()
        await pilot.press("ctrl+c")
        await settle(pilot, app)


@pytest.mark.parametrize(
    ("approval", "keys", "expanded"),
    [("ask", ["y"], True), ("ask", ["a"], True), ("auto", [], False)],
)
async def test_the_edit_just_allowed_shows_its_diff(
    make_app: MakeApp, server: FakeLLMServer, approval: str, keys: list[str], expanded: bool
) -> None:
    read = FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "b.txt"}, "r1")])
    server.add(write_call(), read, "ok")
    app = make_app(approval=approval)
    async with running(app) as pilot:
        await type_line(pilot, app, "write b.txt")
        for key in keys:
            await wait_for(pilot, lambda: asking(app) is not None, "the approval modal")
            await pilot.press(key)
        await settle(pilot, app)
        write, read_item = app.conversation.query(ToolItem)
        assert write.status == read_item.status == "completed"
        assert write.collapsed is not expanded
        assert read_item.collapsed  # other results stay collapsed
        assert app.resolver.allowed == set()
        if expanded:
            await pilot.pause()
            assert "+new" in shown_text(write.detail)


def footer(app: ChatApp) -> str:
    return app.status_bar.line()


def shell_call(command: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("execute_command", {"command": command})])


async def test_shift_tab_cycles_the_approval_mode(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    server.add(write_call("edits.txt"), "ok", shell_call("echo hi > shell.txt"), "ok")
    server.add(write_call("auto.txt"), "ok", write_call("deny.txt"), "ok", write_call(), "ok")
    app = make_app(approval="ask", extra="allow_shell = true")
    async with running(app) as pilot:
        assert "approval ask (⇧Tab)" in footer(app)
        await pilot.press("shift+tab")
        assert app.chat.approval_mode() == "edits"
        assert "approval auto for edits (⇧Tab)" in footer(app)
        await type_line(pilot, app, "write edits.txt")  # auto for edits: an edit is not asked
        await settle(pilot, app)
        assert (work / "edits.txt").exists() and asking(app) is None
        modal = await question(pilot, app, "run a command")  # a shell command still asks
        why = shown_text(modal.query_one("#approval-why-asked", Static))
        assert " ".join(why.split()) == EDITS_ASKS  # (wrapped to the modal's width)
        await pilot.press("n")
        await settle(pilot, app)
        assert not (work / "shell.txt").exists()
        await pilot.press("shift+tab")
        assert "approval auto (⇧Tab)" in footer(app)
        await type_line(pilot, app, "write auto.txt")  # auto: not asked
        await settle(pilot, app)
        assert (work / "auto.txt").exists()
        await pilot.press("shift+tab")
        assert "approval deny" in footer(app)
        await type_line(pilot, app, "write deny.txt")  # deny: refused, not asked
        await settle(pilot, app)
        assert not (work / "deny.txt").exists()
        await pilot.press("shift+tab")
        assert "approval ask" in footer(app)
        await answer(pilot, app, "write b.txt", "n")  # ask again: the modal comes
        statuses = [item.status for item in app.conversation.query(ToolItem)]
    assert statuses == ["completed", "denied", "completed", "denied", "denied"]


async def test_the_mode_stays_when_the_provider_is_switched(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    other = f'[providers.other]\napi_base = "{server.base_url}"\ndefault_model = "other-model"'
    app = make_app(approval="ask", extra=other)
    async with running(app) as pilot:
        await pilot.press("shift+tab")
        app.prompt_input.load_text(":models other/other-model")
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.chat.provider == "other"  # the session was reopened with it
        assert app.chat.approval_mode() == "edits"
        assert "approval auto for edits" in footer(app)
        app.prompt_input.load_text(":new")
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.chat.approval_mode() == "ask"  # a new session starts afresh
        assert "approval ask" in footer(app)


async def test_thinking_is_drawn_at_most_once_a_frame(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    async with running(app) as pilot:
        view = app.conversation
        await view.show(ThinkingDelta("first "))
        [item] = view.query(ThinkingItem)
        drawn: list[str] = []
        update = item.body.update
        monkeypatch.setattr(item.body, "update", lambda text: drawn.append(str(text)))
        for n in range(500):  # a long thought, in one frame: one draw, not 500
            await view.show(ThinkingDelta(f"w{n} "))
        assert len(drawn) <= 1
        monkeypatch.setattr(item.body, "update", update)
        view.end_stream()  # what is held back is drawn at once
        await pilot.pause()
        assert shown_text(item.body).replace("\n", "").endswith("w499")
