"""The approval modal: each key, arrows and Enter, Esc kept, queued and cancelled requests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.tui.app import ChatApp
from openheim.tui.approval import ApprovalScreen
from openheim.tui.items import NoticeItem, ToolItem
from tests.tui.conftest import MakeApp
from tests.tui.drive import lines, running, send, settle, type_line, wait_for


def write_call(name: str = "b.txt") -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": "new\n"})])


async def question(pilot: Pilot[int], app: ChatApp, prompt: str) -> ApprovalScreen:
    """Send ``prompt`` and wait for its first approval question."""
    await type_line(pilot, app, prompt)
    await wait_for(pilot, lambda: asking(app) is not None, "the approval modal")
    modal = asking(app)
    assert modal is not None
    return modal


async def answer(pilot: Pilot[int], app: ChatApp, prompt: str, key: str) -> None:
    """Send ``prompt``, answer its first approval question with ``key``, wait for the end."""
    await question(pilot, app, prompt)
    await pilot.press(key)
    await settle(pilot, app)


def asking(app: ChatApp) -> ApprovalScreen | None:
    screen = app.screen
    return screen if isinstance(screen, ApprovalScreen) else None


@pytest.mark.parametrize(
    ("keys", "status", "written"),
    [
        (["y"], "completed", True),
        (["a"], "completed", True),
        (["n"], "denied", False),
        (["r"], "denied", False),
        (["down", "enter"], "completed", True),
        (["down", "down", "enter"], "denied", False),
    ],
)
async def test_each_answer(
    make_app: MakeApp,
    server: FakeLLMServer,
    work: Path,
    keys: list[str],
    status: str,
    written: bool,
) -> None:
    server.add(write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        modal = await question(pilot, app, "write b.txt")
        assert modal.request.tool == "write_file"
        shown = " ".join(str(w.render()) for w in modal.query("Static"))
        assert '"path": "b.txt"' in shown and "+new" in modal.diff
        await pilot.press("escape")  # Esc does not dismiss it
        assert asking(app) is modal
        for key in keys:
            await pilot.press(key)
        await settle(pilot, app)
        [item] = app.conversation.query(ToolItem)
        assert item.status == status
    assert (work / "b.txt").exists() == written


async def test_allow_always_is_not_asked_again(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    server.add(write_call(), write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        await answer(pilot, app, "write twice", "a")
        statuses = [item.status for item in app.conversation.query(ToolItem)]
    assert statuses == ["completed", "completed"]


def request(call: str) -> ApprovalRequest:
    return ApprovalRequest(call, "execute_command", {"command": f"rm {call}"}, False, "execute")


async def test_concurrent_requests_queue_and_cancelled_ones_go(make_app: MakeApp) -> None:
    app = make_app(approval="ask")
    async with running(app) as pilot:
        ask = Ask(prompt="[subagent helper]", reasons=("deletes files",))
        first = asyncio.ensure_future(app.resolver(request("one"), ask))
        second = asyncio.ensure_future(app.resolver(request("two"), ask))
        third = asyncio.ensure_future(app.resolver(request("three"), ask))
        await wait_for(pilot, lambda: asking(app) is not None, "the first modal")
        modal = asking(app)
        assert modal is not None and modal.request.tool_call_id == "one"
        shown = " ".join(str(w.render()) for w in modal.query("Static"))
        assert "[subagent helper]" in shown and "deletes files" in shown
        assert app.resolver.waiting == 3
        second.cancel()  # its turn was cancelled while it waited: it leaves the queue
        await pilot.press("y")
        assert await asyncio.wait_for(first, 5) == Allow()
        await wait_for(pilot, lambda: app.resolver.waiting == 1, "the queue to move on")
        modal = asking(app)
        assert modal is not None and modal.request.tool_call_id == "three"
        third.cancel()  # cancelled while shown: its modal closes
        await wait_for(pilot, lambda: asking(app) is None, "the modal to close")
        assert second.cancelled() and third.cancelled()
        assert app.resolver.waiting == 0


async def test_reject_always_is_a_deny_that_is_learnt(make_app: MakeApp) -> None:
    app = make_app(approval="ask")
    async with running(app) as pilot:
        answer = asyncio.ensure_future(app.resolver(request("x"), Ask()))
        await wait_for(pilot, lambda: asking(app) is not None, "the modal")
        await pilot.press("r")
        result = await asyncio.wait_for(answer, 5)
    assert isinstance(result, Deny) and result.always


async def test_new_session_resets_approvals(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    server.add(write_call(), "ok", write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        await answer(pilot, app, "write", "a")
        await send(pilot, app, ":new")
        await answer(pilot, app, "write again", "n")
        [item] = app.conversation.query(ToolItem)
        assert item.status == "denied"


async def test_ctrl_c_during_a_question_cancels_the_turn_and_closes_it(
    make_app: MakeApp, server: FakeLLMServer, work: Path
) -> None:
    server.add(write_call(), "after")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        await question(pilot, app, "write")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: asking(app) is None, "the modal to close")
        await settle(pilot, app)
        [item] = app.conversation.query(ToolItem)
        assert item.status == "cancelled"
        await send(pilot, app, "go on")
        assert app.resolver.waiting == 0
    assert not (work / "b.txt").exists()
    assert server.requests[-1].body["messages"][-1]["content"] == "go on"


async def test_the_option_keys_and_the_plain_title_show(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        modal = await question(pilot, app, "write b.txt")
        await pilot.pause()
        choices = modal.query_one(OptionList)
        shown = [choices.render_line(y).text.strip() for y in range(choices.size.height)]
        for text in ("[y] allow once", "[a] allow always", "[n] reject", "[r] reject always"):
            assert any(line == text for line in shown), shown
        title = modal.query_one("#approval-title", Static).render()
        assert str(title) == "Allow openheim to write b.txt?"
        await pilot.press("n")
        await settle(pilot, app)


@pytest.mark.parametrize(
    ("keys", "told"),
    [
        (["tab", *"use c.txt", "enter"], "the user rejected this tool call, saying: use c.txt"),
        (["tab", *"ry", "shift+tab", "r"], "for the rest of the session, saying: ry"),
        (["tab", *"ya", "shift+tab", "y"], None),
    ],
)
async def test_a_reason_for_the_model(
    make_app: MakeApp, server: FakeLLMServer, work: Path, keys: list[str], told: str | None
) -> None:
    server.add(write_call(), "ok")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        await question(pilot, app, "write b.txt")
        for key in keys:
            await pilot.press(key)
        await settle(pilot, app)
    results = [m["content"] for m in server.requests[1].messages if m.get("role") == "tool"]
    assert (work / "b.txt").exists() is (told is None)
    assert told is None or told in results[0]


async def test_a_rejected_write_ends_with_the_closing_warning(
    make_app: MakeApp, server: FakeLLMServer
) -> None:
    server.add(write_call(), "I wrote b.txt")
    app = make_app(approval="ask")
    async with running(app) as pilot:
        await answer(pilot, app, "write b.txt", "n")
        shown = lines(app, NoticeItem)
    warning = "1 tool call was denied; the answer above may describe work that was refused"
    assert shown[-1] == warning
