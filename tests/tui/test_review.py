"""The terminal UI reviewed at the smallest common terminal, 80x24: an approval question about
a big edit keeps its choices and the reason's field on the screen (the arguments and the diff
scroll), as a Textual pilot and on a real pseudo-terminal."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widgets import Input, OptionList

from openheim.messages import Usage
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.approval import hunks
from openheim.tui.status import StatusBar
from tests.tui.conftest import MakeApp
from tests.tui.drive import running, settle, type_line, wait_for
from tests.tui.pty_screen import PtyScreen
from tests.tui.support import child_env, configure
from tests.tui.test_approvals import asking

SMALL = (80, 24)
LINES = 40


def big_edit(work: Path) -> FakeReply:
    """A write_file call that changes one line of a 40-line file: long arguments, a diff."""
    (work / "b.txt").write_text("".join(f"line {n}\n" for n in range(LINES)))
    new = "".join("changed\n" if n == 20 else f"line {n}\n" for n in range(LINES))
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": "b.txt", "content": new})])


@pytest.mark.parametrize("size", [SMALL, (100, 30), (60, 20)])
async def test_the_choices_stay_on_a_small_screen(
    make_app: MakeApp, server: FakeLLMServer, work: Path, size: tuple[int, int]
) -> None:
    server.add(big_edit(work), "ok")
    app = make_app(approval="ask")
    async with running(app, size=size) as pilot:
        await type_line(pilot, app, "change b.txt")
        await wait_for(pilot, lambda: asking(app) is not None, "the approval modal")
        await pilot.pause()
        modal = asking(app)
        assert modal is not None
        screen = Region(0, 0, *size)
        for widget in (modal.query_one(OptionList), modal.query_one(Input)):
            shown = widget.region
            assert shown.height > 0 and screen.contains_region(shown), (widget, shown)
        choices = modal.query_one(OptionList)
        assert choices.region.height >= choices.option_count  # every choice, none scrolled
        await pilot.press("y")
        await settle(pilot, app)
    assert "changed" in (work / "b.txt").read_text()


def test_the_approval_keys_show_at_80x24(home: Path, work: Path, server: FakeLLMServer) -> None:
    server.add(big_edit(work), "kept")
    configure(home, server, extra='approval = "ask"')
    argv = [sys.executable, "-m", "openheim", "chat"]
    term = PtyScreen(argv, work, child_env(home), columns=SMALL[0], lines=SMALL[1])
    try:
        term.wait_for("fake/fake-model")
        term.type("change b.txt\r")
        term.wait_for("Allow openheim to write b.txt?")
        for option in ("[y] allow once", "[n] reject", "[t] no, and tell the model why"):
            term.wait_for(option)
        term.wait_for("-line 20")  # the change itself first; the arguments are folded
        term.type("y")
        term.wait_for("kept")
        term.type("\x11")  # Ctrl+Q
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "changed" in (work / "b.txt").read_text()


@pytest.mark.parametrize(
    ("diff", "shown"),
    [
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "@@ -1 +1 @@\n-a\n+b\n"),
        ("+staged\n", "+staged\n"),
        ("--- a/x\n+++ b/x\n", "--- a/x\n+++ b/x\n"),
        ("--- a/x\n@@ -1 +1 @@\n-a\n", "--- a/x\n@@ -1 +1 @@\n-a\n"),
        ("", ""),
    ],
)
def test_the_modal_shows_the_hunks_without_the_file_header(diff: str, shown: str) -> None:
    assert hunks(diff) == shown


def busy_bar() -> StatusBar:
    """A footer with every part shown: a long model name, a cost, a running turn, a hint."""
    bar = StatusBar()
    bar.model = "anthropic/claude-sonnet-4-5-20250929"
    bar.mode = "ask"
    bar.context = "12k / 200k ctx"
    bar.usage = Usage(input_tokens=12_000, output_tokens=345)
    bar.cost = 0.0123
    bar.busy_since = time.monotonic() - 5
    bar.hint = "press Ctrl+C again to quit"
    return bar


@pytest.mark.parametrize(
    ("width", "kept"),
    [
        (200, ("claude-sonnet", "approval ask", "ctx", "tok ·", "$0.0123", "5s", "again to quit")),
        (78, ("ctx", "$0.0123", "5s", "tok/s", "again to quit")),
        (58, ("$0.0123", "5s", "tok/s", "again to quit")),
        (40, ("$0.0123", "again to quit")),
        (20, ("press Ctrl+C again to quit",)),
    ],
)
def test_the_footer_keeps_the_ticker_and_the_hint_on_a_narrow_screen(
    width: int, kept: tuple[str, ...]
) -> None:
    shown = busy_bar().line(width)
    assert len(shown) <= width or shown == busy_bar().hint, shown
    for part in kept:
        assert part in shown, (part, shown)


async def test_the_footer_fits_the_terminal(make_app: MakeApp) -> None:
    app = make_app()
    async with running(app, size=SMALL) as pilot:
        bar, full = app.status_bar, busy_bar()
        bar.model, bar.context, bar.cost, bar.hint = full.model, full.context, 0.5, full.hint
        bar.refresh_line()
        await pilot.pause()
        shown = bar.render_line(0).text.strip()
        assert "again to quit" in shown and "claude-sonnet" in shown, shown
