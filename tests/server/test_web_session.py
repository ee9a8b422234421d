"""The web page's login and sessions in a real headless chromium: the login form, a login that
survives a restart of ``openheim serve``, a session opened mid-answer (a second tab, a reload)
showing the whole turn so far, and the open session in the URL. Screenshots go to the
artefacts folder (``$OPENHEIM_ARTEFACTS`` when set)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Browser, Page, expect

from openheim.testing import FakeLLMServer
from tests.server.support import TOKEN, Served, served, write_config
from tests.server.test_serve_cli import base_of, read_start, start, stop

TIMEOUT_MS = 10_000
UNKNOWN = "00000000-0000-4000-8000-000000000000"
OTHER = "http://other.example"


async def new_page(browser: Browser) -> Page:
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    return page


async def log_in_with_link(page: Page, server: Served) -> None:
    await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
    await expect(page.locator("#title")).to_have_text("No session")


async def send(page: Page, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("#send")


def session_of(page: Page) -> str:
    found = re.search(r"#s=([0-9a-f-]{36})$", page.url)
    assert found is not None, page.url
    return found.group(1)


async def test_the_login_form_logs_in(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / "README.md").write_text("# Demo\n")
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            page = await new_page(browser)
            await page.goto(f"{server.url}/")
            await expect(page).to_have_url(f"{server.url}/login")
            await page.fill("#token", "not-the-token-0123456789")
            await page.click("button[type=submit]")
            await expect(page.locator(".message")).to_have_text("That is not the server's token.")
            await page.fill("#token", TOKEN)
            await page.screenshot(path=artefacts / "session-01-login-form.png")
            await page.click("button[type=submit]")
            await expect(page).to_have_url(f"{server.url}/")
            await expect(page.locator("#files")).to_contain_text("README.md")
            await page.screenshot(path=artefacts / "session-02-logged-in-by-form.png")


async def test_a_used_link_leads_to_a_form_that_works(
    home: Path, work: Path, browser: Browser
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            link = f"{server.url}/login?code={server.context.auth.login_code}"
            first = await new_page(browser)
            await first.goto(link)
            await expect(first.locator("#title")).to_have_text("No session")
            second = await browser.new_page()  # another browser profile: no cookie
            await second.goto(link)
            await expect(second.locator(".message")).to_contain_text("paste the token instead")
            await second.fill("#token", TOKEN)
            await second.click("button[type=submit]")
            await expect(second.locator("#title")).to_have_text("No session")


async def test_a_form_from_another_site_gets_a_readable_page(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            page = await new_page(browser)
            form = (
                f'<form method="post" action="{server.url}/login">'
                '<input id="token" name="token"><button type="submit">go</button></form>'
            )
            await page.route(
                f"{OTHER}/**", lambda route: route.fulfill(body=form, content_type="text/html")
            )
            await page.goto(f"{OTHER}/")
            await page.fill("#token", TOKEN)
            await page.click("button[type=submit]")
            await expect(page).to_have_url(f"{server.url}/login")
            message = page.locator(".message")
            await expect(message).to_contain_text("came from another site")
            await expect(message).to_contain_text("Open the address openheim serve printed")
            await page.screenshot(path=artefacts / "session-03-foreign-form.png")
            assert "allowed_origins" not in await page.content()


async def test_a_restart_keeps_the_browser_logged_in(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer() as llm:
        write_config(home, llm)
        page = await new_page(browser)
        for run, args in enumerate([(), (), ("--new-token",)]):
            process = start(home, work, *args)
            try:
                lines = read_start(process)
                base = base_of(lines)
                if run == 0:
                    await page.goto(lines[1].split(": ", 1)[1].strip())  # the login link
                else:
                    await page.goto(f"{base}/")
                if run < 2:  # the cookie of run 1 logs in on run 2
                    await expect(page.locator("#title")).to_have_text("No session")
                else:  # a new token: the old cookie is refused
                    await expect(page).to_have_url(f"{base}/login")
                await page.screenshot(path=artefacts / f"session-04-restart-{run}.png")
            finally:
                stop(process)
