"""The web page's controls in a real headless Chromium (Debian's ``chromium`` through
Playwright): Enter sends and Shift+Enter adds a line (an IME composition sends nothing), an
approval shows its title, reason and unified diff and every choice, an edit's result shows
hunks with context, the ``@`` file picker, the busy mark in the session list, a 390 px wide
screen with no sideways scrolling, disabled controls that look disabled, and the favicon.
Screenshots go to the test's artefacts (``$OPENHEIM_ARTEFACTS`` when set)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Browser, Page, expect

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.server.support import Served, served
from tests.server.test_web_page import TIMEOUT_MS

BUSY = re.compile(r"\bbusy\b")
TASKS = "".join(f'  "line {n}": {n},\n' for n in range(1, 13))
"""A protected file (the editor runs what it names): a change to it is asked with a reason."""


@asynccontextmanager
async def logged_in(
    browser: Browser, server: Served, width: int = 1280, height: int = 800
) -> AsyncIterator[Page]:
    page = await browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    try:
        await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
        await expect(page.locator("#prompt")).to_be_visible()
        yield page
    finally:
        await page.close()


async def test_enter_sends_shift_enter_adds_a_line_and_an_ime_composition_sends_nothing(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer(["Got both lines."]) as llm:
        async with served(home, work, llm) as server, logged_in(browser, server) as page:
            prompt = page.locator("#prompt")
            await prompt.press_sequentially("first")
            await prompt.press("Shift+Enter")
            await prompt.press_sequentially("second")
            await expect(prompt).to_have_value("first\nsecond")
            composing = (
                "new KeyboardEvent('keydown', {key: 'Enter', isComposing: true, bubbles: true})"
            )
            await prompt.evaluate(f"(el) => el.dispatchEvent({composing})")
            await expect(prompt).to_have_value("first\nsecond")
            await page.screenshot(path=artefacts / "controls-01-two-lines.png")
            await expect(page.locator(".msg.user")).to_have_count(0)
            await prompt.press("Enter")
            await expect(page.locator(".msg.user")).to_have_text("first\nsecond")
            await expect(prompt).to_have_value("")
            await expect(page.locator(".msg.assistant .text")).to_have_text("Got both lines.")
    assert llm.requests[0].messages[-1]["content"] == "first\nsecond"


async def test_an_approval_shows_its_title_reason_and_diff_and_the_result_its_hunks(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / ".vscode").mkdir()
    (work / ".vscode" / "tasks.json").write_text(TASKS)
    edit = {"path": ".vscode/tasks.json", "old_string": '"line 6": 6', "new_string": '"six": 6'}
    replies: list[FakeReply | str] = [
        FakeReply(tool_calls=[FakeToolCall("edit_file", edit)]),
        "Refused, fine.",
        FakeReply(tool_calls=[FakeToolCall("edit_file", edit)]),
        "Edited.",
    ]
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm) as server, logged_in(browser, server) as page:
            await page.fill("#prompt", "Rename line 6")
            await page.press("#prompt", "Enter")
            card = page.locator(".approval").first
            await expect(card.locator(".title")).to_have_text(
                "Allow openheim to edit .vscode/tasks.json?"
            )
            await expect(card.locator(".reasons li")).to_have_text(
                [
                    "changes .vscode/tasks.json, a protected path: "
                    "the editor runs tasks and tools named in it"
                ]
            )
            diff = card.locator("pre.diff")
            await expect(diff.locator(".hunk")).to_have_text(["@@ -3,7 +3,7 @@"])
            await expect(diff.locator(".del")).to_have_text(['-  "line 6": 6,'])
            await expect(diff.locator(".add")).to_have_text(['+  "six": 6,'])
            await expect(diff.locator(".ctx")).to_have_count(6)  # three lines each side
            await expect(diff).not_to_contain_text("+++")
            labels = await card.locator(".buttons button").all_inner_texts()
            assert labels == ["allow once", "allow always", "reject", "reject always"]
            await page.screenshot(path=artefacts / "controls-02-approval.png")
            await card.locator("input.reason").fill("keep the numbers as words")
            await card.locator("input.reason").press("Enter")  # rejects, with the reason
            await expect(card.locator(".buttons")).to_have_text("Answered: reject")
            await expect(page.locator(".msg.assistant .text").last).to_have_text("Refused, fine.")

            await page.fill("#prompt", "Try again")
            await page.press("#prompt", "Enter")
            await page.locator(".approval").nth(1).locator("button[data-choice=once]").click()
            result = page.locator(".tool.completed pre.diff")
            await expect(result.locator(".hunk")).to_have_text(["@@ -3,7 +3,7 @@"])
            await expect(result.locator(".add")).to_have_text(['+  "six": 6,'])
            await expect(result.locator(".ctx").first).to_have_text('   "line 3": 3,')
            await page.screenshot(path=artefacts / "controls-03-edit-diff.png")
        told = [m["content"] for m in llm.requests[1].messages if m.get("role") == "tool"]
    assert "the user rejected this tool call, saying: keep the numbers as words" in told[0]
    assert '"six": 6' in (work / ".vscode" / "tasks.json").read_text()


HOSTILE = [
    "<img src=x onerror=window.pwned=1>",
    "<script>window.pwned=1</script>",
    '"><svg onload=window.pwned=1>',
    "<a href='javascript:window.pwned=1'>x</a>",
]


async def test_an_approval_and_the_picker_show_hostile_text_as_text(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / f"{HOSTILE[0]}.md").write_text("x\n")
    content = "\n".join(HOSTILE) + "\n"
    write = FakeToolCall("write_file", {"path": "page.html", "content": content})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "ok"]) as llm:
        async with served(home, work, llm) as server, logged_in(browser, server) as page:
            await page.fill("#prompt", "Write it")
            await page.press("#prompt", "Enter")
            card = page.locator(".approval")
            await expect(card.locator("pre.diff .add")).to_have_text([f"+{h}" for h in HOSTILE])
            await card.locator("details.args summary").click()
            await expect(card.locator("pre.arguments")).to_contain_text(HOSTILE[1])
            await page.locator("#prompt").press_sequentially("@img")
            await expect(page.locator("#picker li")).to_have_text([f"{HOSTILE[0]}.md"])
            await page.screenshot(path=artefacts / "controls-09-hostile.png")
            made = "#conversation img, #conversation script, #conversation svg, #picker img"
            assert await page.locator(made).count() == 0
            assert await page.evaluate("window.pwned") is None


async def test_the_at_picker_lists_filters_chooses_and_closes(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / "src").mkdir()
    for name in ("main.py", "maintain.txt", "other.md"):
        (work / "src" / name).write_text("x\n")
    (work / ".env").write_text("KEY=x\n")
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, logged_in(browser, server) as page:
            prompt, picker = page.locator("#prompt"), page.locator("#picker")
            await prompt.press_sequentially("look at @")
            await expect(picker.locator("li")).to_have_text(
                ["src/main.py", "src/maintain.txt", "src/other.md"]
            )
            await prompt.press_sequentially("mai")
            await expect(picker.locator("li")).to_have_text(["src/main.py", "src/maintain.txt"])
            await expect(picker.locator("li.active")).to_have_text("src/main.py")
            await prompt.press("ArrowDown")
            await expect(picker.locator("li.active")).to_have_text("src/maintain.txt")
            await page.screenshot(path=artefacts / "controls-04-picker.png")
            await prompt.press("Enter")
            await expect(picker).to_be_hidden()
            await expect(prompt).to_have_value("look at @src/maintain.txt ")
            await expect(page.locator(".msg.user")).to_have_count(0)  # Enter chose, not sent
            await prompt.press_sequentially("and @oth")
            await expect(picker.locator("li")).to_have_text(["src/other.md"])
            await prompt.press("Escape")
            await expect(picker).to_be_hidden()
            await prompt.press_sequentially("e")
            await expect(picker).to_be_hidden()  # closed for this word until it is left
            await prompt.press_sequentially(" @zzz")
            await expect(picker.locator("li")).to_have_text(["no file matches"])


async def test_the_session_list_marks_a_session_busy_while_a_turn_runs_anywhere(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "a.txt", "content": "a\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "Not written."]) as llm:
        async with (
            served(home, work, llm) as server,
            logged_in(browser, server) as page,
            server.socket() as ws,
        ):
            key = (await ws.call("agent", type="open"))["session_id"]
            row = page.locator(f"#sessions li[data-id='{key}']")
            await ws.call("agent", type="prompt", session_id=key, text="write")
            asked = await ws.until(lambda d: d.get("type") == "approval_request")
            await expect(row).to_have_class(BUSY)
            await expect(row.locator(".busy-mark")).to_be_visible()
            await page.screenshot(path=artefacts / "controls-05-busy.png")
            await ws.call(
                "agent",
                type="approve",
                session_id=key,
                approval_id=asked["data"]["approval_id"],
                choice="reject",
            )
            await ws.events_until_finished(key)
            await expect(row).not_to_have_class(BUSY)


async def test_a_390_px_screen_has_no_sideways_scrolling_and_a_sidebar_toggle(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / "README.md").write_text("# Demo\n")
    wide = "a_very_long_word_" * 20
    write = FakeToolCall("write_file", {"path": "wide.txt", "content": f"{wide}\n"})
    replies: list[FakeReply | str] = [FakeReply(tool_calls=[write]), f"Wrote `{wide}`. {wide}"]
    with FakeLLMServer(replies) as llm:
        async with (
            served(home, work, llm, extra='approval = "auto"') as server,
            logged_in(browser, server, 390, 844) as page,
        ):
            sidebar, toggle = page.locator("#sidebar"), page.locator("#sidebar-toggle")
            await expect(sidebar).to_be_hidden()
            await page.fill("#prompt", f"Write {wide}")
            await page.press("#prompt", "Enter")
            await expect(page.locator(".tool.completed pre.diff")).to_be_visible()
            await expect(page.locator(".msg.assistant .text").last).to_contain_text("Wrote")
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390
            await page.screenshot(path=artefacts / "controls-06-narrow.png")
            await toggle.click()
            await expect(sidebar).to_be_visible()
            await expect(page.locator("#files")).to_contain_text("README.md")
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390
            await page.screenshot(path=artefacts / "controls-07-narrow-sidebar.png")
            await page.locator("#sessions li .name").first.click()
            await expect(sidebar).to_be_hidden()


async def test_disabled_controls_look_disabled_and_the_favicon_is_served(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer(["Hi."]) as llm:
        async with served(home, work, llm) as server, logged_in(browser, server) as page:
            for name in ("#compact", "#undo"):
                await expect(page.locator(name)).to_be_disabled()
            look = "(el) => [getComputedStyle(el).backgroundColor, getComputedStyle(el).cursor]"
            idle = await page.locator("#compact").evaluate(look)
            ready = await page.locator("#send").evaluate(look)
            assert idle[1] == "not-allowed" and ready[1] == "pointer" and idle[0] != ready[0]
            await page.screenshot(path=artefacts / "controls-08-disabled.png")
            await page.fill("#prompt", "Hello")
            await page.press("#prompt", "Enter")
            await expect(page.locator(".msg.assistant .text")).to_have_text("Hi.")
            await expect(page.locator("#compact")).to_be_enabled()
            await expect(page.locator("#undo")).to_be_enabled()
            href = await page.locator("link[rel=icon]").get_attribute("href")
            assert href is not None
            icon = await page.request.get(server.url + href)
            assert icon.status == 200
            assert icon.headers["content-type"].startswith("image/svg+xml")
            assert (await icon.text()).startswith("<svg")
