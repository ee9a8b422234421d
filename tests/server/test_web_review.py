"""The web page reviewed as a user meets it, in Debian's chromium (see ``conftest``): the login
page's favicon, the approval card's title and why it is asked, no console errors over a whole
session, a 300-message session opening fast, no sideways scroll at 390 px. Screenshots go to
the test's artefacts."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from openheim.messages import Message
from openheim.runtime.approvals import MODE_ASKS
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.server.support import Served, served

TIMEOUT_MS = 10_000


async def login(page: Page, server: Served) -> None:
    """Log ``page`` in with the server's one-time link and wait for the prompt box."""
    code = server.context.auth.login_code
    assert code is not None
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{server.url}/login?code={code}")
    await expect(page.locator("#prompt")).to_be_visible()


async def send(page: Page, text: str) -> None:
    await page.fill("#prompt", text)
    await page.press("#prompt", "Enter")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/static/favicon.svg", 200),
        ("/static/favicon.svg/", 401),
        ("/static/favicon.svgx", 401),
        ("/static/app.js", 401),
        ("/static/style.css", 401),
        ("/static/login.js", 200),
    ],
)
async def test_only_the_login_page_and_its_files_are_open(
    home: Path, work: Path, path: str, status: int
) -> None:
    with FakeLLMServer() as llm:
        async with (
            served(home, work, llm) as server,
            httpx.AsyncClient(base_url=server.url) as anonymous,
        ):
            answer = await anonymous.get(path)
    assert answer.status_code == status, path


async def test_the_login_page_has_the_favicon(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 800, "height": 600})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login")
            href = await page.locator("link[rel=icon]").get_attribute("href")
            assert href is not None
            icon = await page.request.get(f"{server.url}{href}")
            await page.screenshot(path=artefacts / "review-login.png")
            assert icon.status == 200
            assert icon.headers["content-type"].startswith("image/svg+xml")


async def test_the_approval_card_says_what_and_why(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "x.txt", "content": "x\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "Done."]) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await login(page, server)
            await send(page, "Write x.txt")
            approval = page.locator(".approval")
            await expect(approval.locator(".title")).to_have_text("Allow openheim to write x.txt?")
            await expect(approval.locator(".why")).to_have_text(MODE_ASKS)
            await page.screenshot(path=artefacts / "review-approval.png")
            await page.set_viewport_size({"width": 390, "height": 800})
            await approval.locator("button[data-choice=once]").scroll_into_view_if_needed()
            await page.screenshot(path=artefacts / "review-approval-390.png")
            overflow = await page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, overflow
            await approval.locator("button[data-choice=once]").click()
            await expect(page.locator(".tool.completed")).to_have_count(1)
    assert (work / "x.txt").read_text() == "x\n"


LONG = 300
"""Messages in the long session the page opens."""
OPEN_LIMIT_S = 5.0
"""How long the page may take to show every message of the long session (it takes about
half a second in headless Chromium on a shared machine)."""


def seed(server: Served, count: int) -> str:
    """A stored session of ``count`` messages (questions and Markdown answers with a table and
    code); its id."""
    store = server.context.store
    record = store.create(cwd=str(server.work), provider="fake", model="fake-model")
    answer = "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint({n})\n```\n\n> quoted {n}"
    for n in range(count // 2):
        store.append(record.id, Message.user(f"question {n}"))
        store.append(record.id, Message.assistant(answer.format(n=n)))
    return record.id


async def test_a_long_session_opens_fast_and_fits_a_phone(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            session = seed(server, LONG)
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await login(page, server)
            started = time.monotonic()
            await page.goto(f"{server.url}/#s={session}")
            await expect(page.locator(".msg")).to_have_count(LONG)
            await expect(page.locator(".msg.assistant").last).to_contain_text("quoted 149")
            took = time.monotonic() - started
            await page.screenshot(path=artefacts / "review-long-session.png")
            (artefacts / "review-long-session.txt").write_text(f"{LONG} messages in {took:.2f} s\n")
            await page.set_viewport_size({"width": 390, "height": 800})
            overflow = await page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            await page.screenshot(path=artefacts / "review-long-session-390.png")
    assert took < OPEN_LIMIT_S, took
    assert overflow <= 0, overflow


async def test_a_whole_session_logs_no_console_error(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / "notes.md").write_text("# Notes\n")
    write = FakeToolCall("write_file", {"path": "y.txt", "content": "y\n"})
    replies: list[FakeReply | str] = [
        FakeReply(chunks=["| a | b |\n|---|---|\n", "| 1 | 2 |\n\n```js\nx()\n```"]),
        FakeReply(tool_calls=[write]),
        "Wrote it.",
    ]
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            await login(page, server)
            await send(page, "A table")
            await expect(page.locator(".msg.assistant table")).to_have_count(1)
            await page.fill("#prompt", "look at @no")
            await expect(page.locator("#picker")).to_contain_text("notes.md")
            await page.press("#prompt", "Escape")
            await send(page, "Write y.txt")
            await page.locator(".approval button[data-choice=once]").click()
            await expect(page.locator(".msg.assistant .text").last).to_have_text("Wrote it.")
            await page.reload()
            await expect(page.locator(".msg.user")).to_have_count(2)
            await page.set_viewport_size({"width": 390, "height": 800})
            await page.screenshot(path=artefacts / "review-console-390.png")
    assert errors == []


async def test_the_keyboard_reaches_every_control_and_leaves_the_prompt(
    home: Path, work: Path, browser: Browser
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await login(page, server)
            await page.focus("#prompt")
            reached: list[str] = []
            for _ in range(40):  # bounded: more stops than the page has
                await page.keyboard.press("Tab")
                reached.append(await page.evaluate("document.activeElement.id || ''"))
            await page.focus("#prompt")
            await page.keyboard.press("Shift+Tab")
            before = await page.evaluate("document.activeElement.id || ''")
    assert reached[0] != "prompt" and before != "prompt"
    assert {"prompt", "send"} <= set(reached)
