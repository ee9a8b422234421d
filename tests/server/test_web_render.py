"""The web page's rendering in a real headless Chromium: hostile Markdown runs nothing, tables,
quotes and highlighted code render, a streamed answer renders each finished block once, the
view follows the end until the reader scrolls up and again once they are back at the bottom,
and the copy buttons put a message's Markdown and a code block's text on the clipboard.

The hostile table renders each row in a page that loads only the static folder (no server, no
content security policy: if the sanitiser let anything through, it would run), once whole and
once streamed in 7-character pieces; the rest drives the real server against FakeLLMServer.
Screenshots go to the test's artefacts (``$OPENHEIM_ARTEFACTS`` when set)."""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Route, async_playwright, expect

from openheim.server.pages import STATIC
from openheim.testing import FakeLLMServer, FakeReply
from tests.server.conftest import CHROMIUM
from tests.server.support import served
from tests.server.test_web_page import TIMEOUT_MS, send

in_module_loop = pytest.mark.asyncio(loop_scope="module")  # one browser for the file's tests

ORIGIN = "http://render.test"

CHECK_JS = """
async ([text, step]) => {
  const { MarkdownStream } = await import("/static/markdown.js");
  const TAGS = new Set(["A", "BLOCKQUOTE", "BR", "CODE", "DEL", "EM", "H1", "H2", "H3", "H4",
    "H5", "H6", "HR", "LI", "OL", "P", "PRE", "S", "SPAN", "STRONG", "TABLE", "TBODY", "TD",
    "TH", "THEAD", "TR", "UL"]);
  const ATTRS = new Set(["href", "title", "class", "start", "target", "rel"]);
  const problems = [];
  const check = (box) => {
    for (const node of box.querySelectorAll("*")) {
      if (node.parentElement === box && node.outerHTML.startsWith('<div class="chunk">')) continue;
      if (!TAGS.has(node.tagName)) problems.push(`tag ${node.tagName}`);
      for (const attr of node.attributes) {
        if (!ATTRS.has(attr.name)) problems.push(`attribute ${attr.name} on ${node.tagName}`);
      }
      const href = node.getAttribute("href");
      if (href !== null && !/^(https?:|mailto:)/i.test(href)) problems.push(`href ${href}`);
      const rel = "noopener noreferrer nofollow";
      if (href !== null && node.rel !== rel) problems.push(`rel ${node.rel}`);
    }
  };
  const render = (piece) => {
    const box = document.createElement("div");
    document.body.append(box);
    const stream = new MarkdownStream(box);
    for (let at = 0; at < text.length; at += piece) {
      stream.append(text.slice(at, at + piece));
      stream.render();
      check(box);
    }
    stream.render(true);
    check(box);
    return box;
  };
  const whole = render(text.length);
  const streamed = render(step);
  const shown = whole.textContent;
  return { problems, whole: whole.innerHTML, streamed: streamed.innerHTML, text: shown };
}
"""

PWN = "window.__pwned=1"
HOSTILE = [
    ("script tag", f"<script>{PWN}</script>", "<script>"),
    ("img onerror", f'<img src=x onerror="{PWN}">', "onerror"),
    ("svg onload", f"<svg onload={PWN}>", "<svg"),
    ("iframe javascript src", f'<iframe src="javascript:{PWN}"></iframe>', "<iframe"),
    ("style block", "<style>body{display:none}</style>", "<style>"),
    ("javascript link", f"[click](javascript:{PWN})", "click"),
    ("javascript link, mixed case", f"[click](JaVaScRiPt:{PWN})", "click"),
    ("javascript link, entity colon", f"[click](javascript&#58;{PWN})", "click"),
    ("javascript autolink", f"<javascript:{PWN}>", "javascript:"),
    ("data link", "[click](data:text/html;base64,PHNjcmlwdD4xPC9zY3JpcHQ+)", "click"),
    ("vbscript link", "[click](vbscript:msgbox)", "click"),
    ("javascript image", f"![pic](javascript:{PWN})", "pic"),
    ("remote image", "![pic](https://tracker.example/p.png?secret=1)", "pic"),
    ("title breakout", f'[x](https://ok.example "t\\" onmouseover=\\"{PWN}")', "x"),
    ("fence info breakout", f'```js" onload="{PWN}\nx = 1\n```', "x = 1"),
    ("fence info proto", "```__proto__\nx = 1\n```", "x = 1"),
    ("fence info class", "```hljs approval\nx = 1\n```", "x = 1"),
    ("nested fences", f"````\n```\n<script>{PWN}</script>\n```\n````", "<script>"),
    ("unterminated fence", f"```html\n<script>{PWN}</script>\n<img src=x onerror={PWN}>", "<img"),
    ("raw html in table", f"| a |\n|---|\n| <img src=x onerror={PWN}> |", "<img"),
    ("raw html in quote", f"> <a href='javascript:{PWN}'>q</a>", "<a href"),
    ("raw html in list", f"- <details open ontoggle={PWN}>", "<details"),
    ("linkified quote breakout", f'see https://ok.example/"onmouseover="{PWN}', "ok.example"),
    ("html entity script", "&lt;script&gt;alert(1)&lt;/script&gt;", "<script>"),
    ("inline code html", f"`<img src=x onerror={PWN}>`", "<img"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Debian's chromium, started once for this file's tests (each test opens its own page)."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def renderer(browser: Browser) -> AsyncIterator[Page]:
    """A page at ``ORIGIN`` that serves only the static folder, nothing else."""
    page = await browser.new_page()

    async def serve(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN)
        if path == "/":
            await route.fulfill(body="<!doctype html><body></body>", content_type="text/html")
            return
        name = path.removeprefix("/static/")
        file = (STATIC / name).resolve()
        if not path.startswith("/static/") or not file.is_relative_to(STATIC) or not file.is_file():
            await route.fulfill(status=404)
            return
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        await route.fulfill(body=file.read_bytes(), content_type=kind)

    await page.route(f"{ORIGIN}/**", serve)
    await page.goto(f"{ORIGIN}/")
    yield page
    assert await page.evaluate("window.__pwned") is None
    await page.close()


async def render(page: Page, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate(CHECK_JS, [text, 7])
    return result


@in_module_loop
@pytest.mark.parametrize(("case", "text", "shown"), HOSTILE, ids=[row[0] for row in HOSTILE])
async def test_hostile_markdown_runs_nothing(
    renderer: Page, case: str, text: str, shown: str
) -> None:
    result = await render(renderer, text)
    assert result["problems"] == [], case
    assert shown in result["text"], case  # shown as text, not dropped
    assert result["streamed"] == result["whole"], case
    # Let the page handle any load or error events the output could have started.
    await renderer.evaluate("new Promise((done) => requestAnimationFrame(() => setTimeout(done)))")
    assert await renderer.evaluate("window.__pwned") is None, case


@in_module_loop
async def test_a_safe_link_opens_apart(renderer: Page) -> None:
    await render(renderer, "[docs](https://docs.example/x) and https://bare.example")
    links = renderer.locator("body > div").first.locator("a")
    await expect(links).to_have_count(2)
    for n in range(2):
        await expect(links.nth(n)).to_have_attribute("rel", "noopener noreferrer nofollow")
        await expect(links.nth(n)).to_have_attribute("target", "_blank")


MARKDOWN = (
    "# Title\n\n| name | size |\n|------|-----:|\n| a.txt | 10 |\n| b.txt | 20 |\n\n"
    "> a quote\n\n```python\ndef f(x):\n    return x\n```\n\n1. one\n2. two\n"
)


@in_module_loop
async def test_tables_quotes_and_highlighted_code(renderer: Page) -> None:
    result = await render(renderer, MARKDOWN)
    assert result["problems"] == []
    assert result["streamed"] == result["whole"]
    box = renderer.locator("body > div").first
    await expect(box.locator("table th")).to_have_text(["name", "size"])
    await expect(box.locator("table td")).to_have_count(4)
    await expect(box.locator("blockquote")).to_have_text("a quote")
    await expect(box.locator("pre code.language-python .hljs-keyword")).to_have_text(
        ["def", "return"]
    )
    await expect(box.locator("ol li")).to_have_count(2)


@in_module_loop
async def test_a_streamed_answer_keeps_its_finished_blocks(renderer: Page) -> None:
    """The first paragraph's node, taken once it is final, is the same node at the end: a
    finished block is never rendered again; finished blocks are grouped in chunks."""
    kept: list[Any] = await renderer.evaluate(
        """async () => {
          const { MarkdownStream } = await import("/static/markdown.js");
          const box = document.createElement("div");
          document.body.append(box);
          const stream = new MarkdownStream(box);
          stream.append("first paragraph\\n\\nsecond");
          stream.render();
          const first = box.querySelector("p");
          for (let n = 0; n < 300; n += 1) {
            stream.append(` word ${n}` + (n % 40 === 0 ? "\\n\\n- item\\n\\n" : ""));
            stream.render();
          }
          stream.render(true);
          const same = box.querySelector("p") === first;
          return [same, box.querySelectorAll("li").length, box.childElementCount];
        }"""
    )
    same, items, children = kept
    assert same
    assert items == 8
    assert children <= 3  # the finished blocks are in one chunk, beside the open block


def long_answer(lines: int) -> list[str]:
    """A Markdown answer of ``lines`` numbered lines, streamed a line per chunk."""
    return [f"line {n} of the answer, with some words to read\n\n" for n in range(lines)]


SCROLL = (
    "(c => ({top: c.scrollTop, height: c.scrollHeight,"
    " bottom: c.scrollHeight - c.scrollTop - c.clientHeight}))"
    "(document.getElementById('conversation'))"
)


async def scroll_state(page: Page) -> dict[str, float]:
    state: dict[str, float] = await page.evaluate(SCROLL)
    return state


async def until(page: Page, condition: str, arg: object = None) -> None:
    """Wait, an animation frame at a time (at most ``TIMEOUT_MS``), until ``condition`` (a
    JavaScript expression over ``s``, the conversation's scroll state, and ``arg``) holds."""
    held = await page.evaluate(
        f"""(arg) => new Promise((done) => {{
          const end = performance.now() + {TIMEOUT_MS};
          const tick = () => {{
            const s = {SCROLL};
            if ({condition}) done(true);
            else if (performance.now() > end) done(false);
            else requestAnimationFrame(tick);
          }};
          tick();
        }})""",
        arg,
    )
    assert held, f"timed out waiting for {condition} (arg {arg})"


@in_module_loop
async def test_scroll_follow_stops_when_scrolled_up_and_resumes_at_the_bottom(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    chunks = long_answer(400)
    with FakeLLMServer([FakeReply(chunks=chunks, chunk_delay=0.02)]) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 700})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await send(page, "Write a long answer")
            text = page.locator(".msg.assistant .text")
            await expect(text).to_contain_text("line 60 of")
            assert (await scroll_state(page))["bottom"] <= 4  # following the end

            await page.locator("#conversation").hover()
            await page.mouse.wheel(0, -400)
            await until(page, "s.bottom > 300")
            await page.screenshot(path=artefacts / "render-01-scrolled-up.png")
            before = await scroll_state(page)
            await until(page, "s.height > arg + 1500", before["height"])
            after = await scroll_state(page)
            assert after["top"] == before["top"]  # left where the reader put it
            assert after["bottom"] > before["bottom"]

            await page.mouse.wheel(0, 10**6)  # back to the bottom
            await until(page, "s.bottom <= 4")
            height = (await scroll_state(page))["height"]
            await until(page, "s.height > arg + 1500 && s.bottom <= 4", height)  # following
            await expect(text).to_contain_text("line 399 of")
            await until(page, "s.bottom <= 4")
            await page.screenshot(path=artefacts / "render-02-following.png")


CODE = "def greet(name):\n    return f'hello {name}'"
ANSWER = f"Here is **the** function:\n\n```python\n{CODE}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"


@in_module_loop
async def test_copy_buttons_copy_the_message_and_the_code(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    with FakeLLMServer([FakeReply(chunks=[ANSWER[:30], ANSWER[30:]])]) as llm:
        async with served(home, work, llm) as server:
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            clipboard = ["clipboard-read", "clipboard-write"]
            await context.grant_permissions(clipboard, origin=server.url)
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await send(page, "Show me a function")
            answer = page.locator(".msg.assistant")
            await expect(answer.locator("table td")).to_have_count(2)
            await expect(answer.locator(".hljs-keyword").first).to_have_text("def")

            await answer.get_by_role("button", name="Copy code").click()
            await expect(answer.locator(".code > button.copy")).to_have_attribute(
                "data-state", "copied"
            )
            assert await page.evaluate("navigator.clipboard.readText()") == CODE

            await answer.hover()
            await answer.get_by_role("button", name="Copy message").click()
            assert await page.evaluate("navigator.clipboard.readText()") == ANSWER
            await page.screenshot(path=artefacts / "render-03-copied.png")

            user = page.locator(".msg.user")
            await user.hover()
            await user.get_by_role("button", name="Copy message").click()
            assert await page.evaluate("navigator.clipboard.readText()") == "Show me a function"
            await context.close()


@in_module_loop
async def test_a_hostile_answer_through_the_server(
    home: Path, work: Path, browser: Browser, artefacts: Path
) -> None:
    """Every hostile row streamed in one answer through the real server: nothing runs, the
    raw HTML shows as text."""
    rows = sorted(HOSTILE, key=lambda row: row[0] == "unterminated fence")  # it takes the rest
    answer = "\n\n".join(text for _, text, _ in rows)
    pieces = [answer[at : at + 11] for at in range(0, len(answer), 11)]
    with FakeLLMServer([FakeReply(chunks=pieces)]) as llm:
        async with served(home, work, llm) as server:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server.url}/login?code={server.context.auth.login_code}")
            await send(page, "Be hostile")
            text = page.locator(".msg.assistant .text")
            await expect(text).to_contain_text("<script>alert(1)</script>")  # the entities
            await expect(text.locator("table")).to_have_count(1)
            await expect(text).to_contain_text("<script>window.__pwned=1</script>")
            scripts = await text.evaluate("t => t.querySelectorAll('script, img, iframe').length")
            assert scripts == 0
            await page.screenshot(path=artefacts / "render-04-hostile.png", full_page=True)
            assert await page.evaluate("window.__pwned") is None


def test_the_vendored_files_are_the_ones_versions_names() -> None:
    """Every file in static/vendor/ has its SHA-256 in VERSIONS (``scripts/vendor-web`` writes
    it from the pinned npm packages), with a licence beside each library."""
    vendor = STATIC / "vendor"
    listed = {}
    for line in (vendor / "VERSIONS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64 and name:
            listed[name] = digest
    files = {p.name for p in vendor.iterdir()} - {"VERSIONS"}
    assert set(listed) == files
    for name, digest in listed.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
    for library in ("markdown-it", "dompurify", "highlight.js"):
        assert f"LICENSE.{library}" in files
