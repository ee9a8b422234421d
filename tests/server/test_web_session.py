"""The web page's login and sessions in a real headless chromium: the login form, a login that
survives a restart of ``openheim serve``, a session opened mid-answer (a second tab, a reload)
showing the whole turn so far, and the open session in the URL. Screenshots go to the
artefacts folder (``$OPENHEIM_ARTEFACTS`` when set)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Page, expect

from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import TOKEN, Served, served, write_config
from tests.server.test_serve_cli import base_of, read_start, start, stop

TIMEOUT_MS = 10_000
UNKNOWN = "00000000-0000-4000-8000-000000000000"
OTHER = "http://other.example"


async def new_context(browser: Browser) -> BrowserContext:
    """A browser profile of its own (its own cookies) whose pages are tabs sharing them."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    return context


async def new_page(browser: Browser) -> Page:
    return await (await new_context(browser)).new_page()


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


PROMPT = "Tell me about the fox"
SHOWN = "The quick brown fox"
FOX = FakeReply(chunks=["The ", "quick ", "brown ", "fox ", "jumps ", "over."], hang_at=5)
"""Streams its role chunk and four words, then stalls until cancelled: a turn mid-answer."""


async def expect_turn_so_far(page: Page) -> None:
    await expect(page.locator(".msg.user")).to_have_text([PROMPT])
    await expect(page.locator(".msg.assistant .text")).to_have_text([SHOWN])
    await expect(page.locator("#cancel")).to_be_enabled()


async def test_a_second_tab_and_a_reload_show_the_whole_turn_so_far(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer([FOX]) as llm:
        async with served(home, work, llm) as server:
            context = await new_context(browser)
            first = await context.new_page()
            await log_in_with_link(first, server)
            await send(first, PROMPT)
            await expect(first.locator(".msg.assistant .text")).to_have_text(SHOWN)
            second = await context.new_page()
            await second.goto(f"{server.url}/#s={session_of(first)}")
            await expect_turn_so_far(second)
            await second.screenshot(path=artefacts / "session-05-second-tab-mid-answer.png")
            await first.reload()
            await expect_turn_so_far(first)
            await first.screenshot(path=artefacts / "session-06-reloaded-mid-answer.png")
            await second.click("#cancel")
            for page in (first, second):
                await expect(page.locator(".notice").last).to_have_text("cancelled")


async def test_a_reload_and_a_reopen_mid_stream_show_the_start_then_the_rest(
    home: Path, work: Path, browser: Browser
) -> None:
    words = [f"w{i} " for i in range(150)]
    with FakeLLMServer([FakeReply(chunks=words, chunk_delay=0.03)]) as llm:
        async with served(home, work, llm) as server:
            page = await new_page(browser)
            await log_in_with_link(page, server)
            await send(page, PROMPT)
            answer = page.locator(".msg.assistant .text")
            await expect(answer).to_contain_text("w3 ")
            await page.reload()
            await expect(answer).to_contain_text("w0 w1 w2 w3")
            await page.click("#sessions li .name")  # the open session again, in the same tab
            await expect(answer).to_contain_text("w0 w1 w2 w3")
            # every word once, in order: the replay and the live frames neither overlap nor gap
            await expect(answer).to_have_text("".join(words).strip())
            await expect(page.locator(".msg.user")).to_have_text([PROMPT])


async def test_the_session_in_the_url(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer(["Hello there."]) as llm:
        async with served(home, work, llm) as server:
            context = await new_context(browser)
            page = await context.new_page()
            await log_in_with_link(page, server)
            await send(page, "Say hello")
            await expect(page.locator(".msg.assistant .text")).to_have_text("Hello there.")
            session = session_of(page)
            await page.reload()  # the reload reopens it
            await expect(page.locator(".msg.assistant .text")).to_have_text("Hello there.")
            assert session_of(page) == session
            await page.goto(f"{server.url}/")
            await expect(page.locator("#title")).to_have_text("No session")
            await page.goto(f"{server.url}/#s={session}")  # a link opens it
            await expect(page.locator(".msg.user")).to_have_text(["Say hello"])
            await page.screenshot(path=artefacts / "session-07-opened-by-link.png")
            await page.goto(f"{server.url}/#s=not-a-session")  # the same page: the hash changes
            error = page.locator("#conversation .error")
            await expect(error).to_contain_text('cannot be opened: "not-a-session" is not a')
            assert "#" not in page.url
            fresh = await context.new_page()  # a link opened in a new tab
            await fresh.goto(f"{server.url}/#s={UNKNOWN}")
            error = fresh.locator("#conversation .error")
            await expect(error).to_contain_text(f"cannot be opened: no session {UNKNOWN}")
            await expect(error).to_contain_text("pick one from the list or start a new one")
            await expect(fresh.locator("#title")).to_have_text("No session")
            await fresh.screenshot(path=artefacts / "session-08-unknown-session.png")
            assert "#" not in fresh.url
            elsewhere = await (await new_context(browser)).new_page()  # not logged in yet
            await elsewhere.goto(f"{server.url}/#s={session}")
            await expect(elsewhere).to_have_url(f"{server.url}/login#s={session}")
            await elsewhere.fill("#token", TOKEN)
            await elsewhere.click("button[type=submit]")
            await expect(elsewhere.locator(".msg.user")).to_have_text(["Say hello"])
            assert session_of(elsewhere) == session
