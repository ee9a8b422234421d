"""The web page in a real headless Chromium (Debian's ``chromium``, started through Playwright
with ``executable_path``): log in with the link, stream an answer, approve a tool call, cancel a
turn, reopen a session, view a file. A screenshot of each state goes to the test's artefacts
(``$OPENHEIM_ARTEFACTS`` when set, else the test's temporary folder); the browser and that
folder are the fixtures of ``tests/server/conftest.py``."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from playwright.async_api import Browser, Page, expect

from openheim.server.ws import Connection
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.server.support import served

TIMEOUT_MS = 10_000


async def send(page: Page, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("#send")


async def test_the_page_end_to_end(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    (work / "README.md").write_text("# Demo project\n\nA file to view.\n")
    (home / "system.md").write_text("You are a careful coding agent.\n")
    write = FakeToolCall("write_file", {"path": "hello.txt", "content": "hello\n"})
    replies: list[FakeReply | str] = [
        FakeReply(chunks=["Hello ", "from ", "**openheim**", "!\n\n- one\n- two"], reasoning="hm"),
        FakeReply(tool_calls=[write]),
        "Wrote `hello.txt`.",
        FakeReply(chunks=["slow "] * 200, chunk_delay=0.05),
    ]
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(TIMEOUT_MS)
            urls: list[str] = []
            page.on("request", lambda request: urls.append(request.url))
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await expect(page.locator("#files")).to_contain_text("README.md")
            await page.screenshot(path=artefacts / "01-logged-in.png")

            await send(page, "Say hello")
            answer = page.locator(".msg.assistant .text strong")
            await expect(answer).to_have_text("openheim")
            await expect(page.locator(".msg.assistant li")).to_have_count(2)
            await page.screenshot(path=artefacts / "02-streamed.png")

            await send(page, "Write a file")
            approval = page.locator(".approval")
            await expect(approval).to_contain_text("Allow openheim to write hello.txt?")
            await page.screenshot(path=artefacts / "03-approval.png")
            await approval.locator("button[data-choice=once]").click()
            await expect(page.locator(".tool.completed")).to_have_count(1)
            await expect(page.locator(".msg.assistant code").last).to_have_text("hello.txt")
            await expect(page.locator("#files")).to_contain_text("hello.txt")
            await expect(page.locator("#footer")).not_to_contain_text("0 tokens")
            await page.screenshot(path=artefacts / "04-approved.png")

            await send(page, "Take your time")
            await expect(page.locator(".msg.assistant .text").last).to_contain_text("slow")
            await page.click("#cancel")
            await expect(page.locator(".notice").last).to_have_text("cancelled")
            await page.screenshot(path=artefacts / "05-cancelled.png")

            await page.reload()
            await expect(page.locator("#sessions li")).to_have_count(1)
            await page.click("#sessions li .name")
            await expect(page.locator(".msg.user")).to_have_count(3)
            await expect(page.locator(".msg.assistant strong").first).to_have_text("openheim")
            await page.click("#files li span:text('README.md')")
            await expect(page.locator("#viewer-content")).to_contain_text("A file to view.")
            await page.screenshot(path=artefacts / "06-reopened.png")
    assert (work / "hello.txt").read_text() == "hello\n"
    assert urls and all(url.startswith(server.url) for url in urls)  # no CDN, no other host


async def test_an_approval_rejected_with_a_reason(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "hello.txt", "content": "hello\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "I wrote hello.txt"]) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await send(page, "Write a file")
            approval = page.locator(".approval")
            await expect(approval).to_contain_text("Allow openheim to write hello.txt?")
            await expect(approval.locator("pre.diff")).to_contain_text("+hello")
            labels = await approval.locator("button").all_inner_texts()
            assert labels == ["allow once", "allow always", "reject", "reject always"]
            await approval.locator("input.reason").fill("use notes.md instead")
            await page.screenshot(path=artefacts / "07-reject-with-reason.png")
            await approval.locator("button[data-choice=reject]").click()
            await expect(page.locator(".tool.denied")).to_have_count(1)
            await expect(approval).to_contain_text("Answered: reject")
        told = [m["content"] for m in llm.requests[1].messages if m.get("role") == "tool"]
    assert not (work / "hello.txt").exists()
    assert "the user rejected this tool call, saying: use notes.md instead" in told[0]


async def test_the_compact_and_undo_buttons(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "made.txt", "content": "made\n"})
    replies: list[FakeReply | str] = [FakeReply(tool_calls=[write]), "Made it."]
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm, extra='approval = "auto"') as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await send(page, "Make a file")
            await expect(page.locator(".msg.assistant .text").last).to_have_text("Made it.")
            await page.click("#compact")
            await expect(page.locator(".notice").last).to_have_text("nothing to compact yet")
            await page.click("#undo")
            notice = page.locator(".notice").last
            await expect(notice).to_have_text(f"undid 1 turn removed {work / 'made.txt'}")
            await expect(page.locator(".msg.user")).to_have_count(0)
            await page.screenshot(path=artefacts / "07-undone.png")
            await page.click("#undo")
            await expect(page.locator("#conversation .error").last).to_contain_text(
                "nothing to undo"
            )
    assert not (work / "made.txt").exists()


async def test_the_page_tells_of_frames_it_missed(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer([FakeReply(chunks=["a "] * 12)]) as llm:
        async with served(home, work, llm) as server:
            server.context.store.frames.keep = 5
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await page.click("#new-session")
            await expect(page.locator("#title")).to_have_text("New session")
            (live,) = server.context.hub.sessions.values()
            (seen,) = live.subscribers
            live.unsubscribe(seen)  # the page gets none of the prompt's frames, unknowing
            async with server.socket() as ws:
                await ws.call("agent", type="resume", session_id=live.key)
                await ws.call("agent", type="prompt", session_id=live.key, text="go")
                last = (await ws.events_until_finished(live.key))[-1]["seq"]
            await cast(Connection, seen).websocket.close(code=1012)  # it re-attaches after 0
            missed = f"frames 1 to {last - 5} of session {live.key} are no longer kept"
            await expect(page.locator(".notice").last).to_contain_text(missed)
            await page.screenshot(path=artefacts / "08-missed.png")
