"""The web page reviewed as a user meets it, in Debian's chromium (see ``conftest``): the login
page's favicon, the approval card's title and why it is asked, no console errors over a whole
session, a 300-message session opening fast, no sideways scroll at 390 px. Screenshots go to
the test's artefacts."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

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
            await approval.locator("button[data-choice=once]").click()
            await expect(page.locator(".tool.completed")).to_have_count(1)
    assert (work / "x.txt").read_text() == "x\n"
