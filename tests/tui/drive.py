"""Driving the app in tests: wait until it is idle, send a line, read its items."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from openheim.tui.app import ChatApp

SIZE = (100, 40)


async def settle(pilot: Pilot[int], app: ChatApp) -> None:
    """Wait until the session is open and no turn or command runs (bounded)."""
    for _ in range(2000):  # 20 s at most: a loaded machine is slow, not wrong
        await pilot.pause(0.01)
        workers = [w for w in app.workers if w.is_running and w.group != "picker"]
        if app.ready and not workers:
            return
    raise AssertionError(f"the app did not settle: {list(app.workers)}")


async def send(pilot: Pilot[int], app: ChatApp, text: str) -> None:
    app.prompt_input.load_text(text)
    await pilot.press("enter")
    await settle(pilot, app)


def lines(app: ChatApp, kind: type[Static]) -> list[str]:
    return [str(item.render()) for item in app.conversation.query(kind)]


async def wait_for(pilot: Pilot[int], check: Callable[[], bool], what: str) -> None:
    """Wait (bounded) until ``check()`` holds."""
    for _ in range(2000):  # 20 s at most
        if check():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def type_line(pilot: Pilot[int], app: ChatApp, text: str) -> None:
    """Put ``text`` in the input and press Enter, without waiting for what it starts."""
    app.prompt_input.load_text(text)
    await pilot.press("enter")


def shown_text(widget: Widget) -> str:
    """What ``widget`` (or the Statics inside it) shows on screen, as plain text lines."""
    parts = [widget] if isinstance(widget, Static) else list(widget.query("Static, MarkdownPart"))
    lines = [strip.text.rstrip() for w in parts for strip in w.render_lines(Region(0, 0, *w.size))]
    return "\n".join(lines)


@contextlib.asynccontextmanager
async def running(app: ChatApp, size: tuple[int, int] = SIZE) -> AsyncIterator[Pilot[int]]:
    """The app run headless, its session open."""
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        yield pilot
