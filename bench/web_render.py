"""Time to render a 2,000-line streamed answer in the web page, beside the terminal UI.

Both surfaces get the same answer: 2,000 lines of Markdown (paragraphs of five lines, a list
every 50 lines, a fenced code block every 200), one line per delta, each line starting with its
number (``L0042``).

- Web page: ``openheim serve``'s app on loopback in this process, against FakeLLMServer (no
  delay between deltas), and the page in Debian's chromium through Playwright. In the page a
  MutationObserver notes when each line's number is first on the page, and the animation-frame
  callbacks (where the page renders) are timed. Printed: first delta to last line visible, the
  span over which the deltas arrived, and the page's render time while the first and while the
  last thousand lines arrived.
- Terminal UI: a headless ``ChatApp`` (Textual's test driver) shown each delta in turn (its
  answer draws at most once per 1/30 s), and whenever 1/60 s has passed every message handled
  and a frame composed (and after the last delta), all timed: first delta to last line drawn.

Then the ratio web / terminal UI (target: at most 2, the median over the runs) and the web
page's render time while the last thousand lines arrived against the first thousand (target: at
most 1, no slower).

    .venv/bin/python bench/web_render.py [--lines 2000] [--runs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from playwright.async_api import async_playwright

from openheim.chat.history import InputHistory
from openheim.config.load import Overrides, load_settings
from openheim.events import TextDelta
from openheim.runtime import SessionOptions
from openheim.runtime.settings import Choices, programmatic_settings
from openheim.server.app import create_app
from openheim.server.launch import build
from openheim.testing import FakeLLMServer, FakeReply
from openheim.tui.app import ChatApp

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TARGET_RATIO = 2.0
FRAME_S = 1 / 60
WAIT_S = 60.0
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "the",
    "agent",
    "reads",
    "the",
    "files",
]

# Notes, in the page, when each line number is first shown and how long each animation-frame
# callback took (with the count of deltas that had arrived when it ran).
PROBE_JS = """
() => {
  const probe = { seen: [], arrived: 0, firstArrival: 0, lastArrival: 0, frames: [] };
  window.__probe = probe;
  const observe = () => new MutationObserver(() => {
    const text = root().querySelector(".msg.assistant:last-of-type .text");
    if (!text) return;
    const now = performance.now();
    for (let node = text.lastElementChild; node; node = node.previousElementSibling) {
      const numbers = [...node.textContent.matchAll(/L(\\d{4})/g)].map((m) => Number(m[1]));
      for (const n of numbers) if (probe.seen[n] === undefined) probe.seen[n] = now;
      if (numbers.length && probe.seen[numbers[0]] < now) break;  // older lines are noted
    }
  }).observe(root(), { childList: true, subtree: true, characterData: true });
  const root = () => document.getElementById("conversation");
  document.addEventListener("DOMContentLoaded", observe);
  const raf = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => raf((t) => {
    const start = performance.now();
    callback(t);
    probe.frames.push([probe.arrived, performance.now() - start]);
  });
  const onMessage = (event) => {
    if (typeof event.data !== "string" || !event.data.includes('"text_delta"')) return;
    probe.arrived += 1;
    probe.lastArrival = performance.now();
    if (probe.arrived === 1) probe.firstArrival = probe.lastArrival;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", onMessage);
    }
  };
}
"""


def answer(lines: int) -> list[str]:
    """``lines`` deltas, one numbered Markdown line each."""
    out: list[str] = []
    fence = False
    for n in range(lines):
        words = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(12))
        if n % 200 == 190:
            out.append(f"```python\n# L{n:04d} {words}\n")
            fence = True
        elif fence and n % 200 == 199:
            out.append(f"def step_{n}(x):  # L{n:04d}\n```\n\n")
            fence = False
        elif fence:
            out.append(f"    x = x * 2  # L{n:04d} {words}\n")
        elif n % 50 >= 45:
            out.append(f"- L{n:04d} {words}\n" + ("\n" if n % 50 == 49 else ""))
        else:
            end = "\n\n" if n % 5 == 4 else "\n"  # paragraphs of five lines
            out.append(f"L{n:04d} **{WORDS[n % len(WORDS)]}** {words} `code`{end}")
    return out


@dataclass
class Timing:
    """Seconds: first delta shown to last line shown, and (the web page) its render time while
    each half of the answer arrived; ``extra`` says more, in words."""

    total_s: float
    first_s: float = 0.0
    last_s: float = 0.0
    extra: str = ""


async def web(pieces: list[str], tmp: Path, delay: float) -> Timing:
    """The page's timing with ``delay`` seconds between deltas at the fake model."""
    home, work = tmp / "home", tmp / "work"
    home.mkdir(parents=True)
    work.mkdir()
    (work / "README.md").write_text("# bench\n")  # the page is ready once its file tree shows
    with FakeLLMServer([FakeReply(chunks=pieces, chunk_delay=delay)]) as llm:
        (home / "config.toml").write_text(
            f'default_provider = "fake"\n[providers.fake]\napi_base = "{llm.base_url}"\n'
            'default_model = "fake-model"\nmodels = ["fake-model"]\n'
        )
        settings = load_settings(
            Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)}
        )
        context, policy = build(settings, public=False)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(create_app(context, policy), log_level="warning"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            return await _web_page(url, context.auth.login_code or "", len(pieces))
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, WAIT_S)
            sock.close()


async def _web_page(url: str, code: str, lines: int) -> Timing:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await page.add_init_script(f"({PROBE_JS})()")
            await page.goto(f"{url}/login?code={code}")
            await page.wait_for_selector("#files li", timeout=WAIT_S * 1000)
            await page.fill("#prompt", "Write a long answer")
            await page.click("#send")
            await page.wait_for_selector(f"text=L{lines - 1:04d}", timeout=WAIT_S * 1000)
            probe: dict[str, Any] = await page.evaluate("window.__probe")
        finally:
            await browser.close()
    seen: list[float] = probe["seen"]
    half = lines // 2
    frames: list[list[float]] = probe["frames"]
    first_frames = [ms for arrived, ms in frames if arrived <= half]
    last_frames = [ms for arrived, ms in frames if arrived > half]
    first, last = sum(first_frames) / 1000, sum(last_frames) / 1000
    arrival = (probe["lastArrival"] - probe["firstArrival"]) / 1000
    extra = (
        f"deltas arrived over {arrival:.2f} s; shown: line {half - 1} at "
        f"{(seen[half - 1] - seen[0]) / 1000:.2f} s; median frame "
        f"{statistics.median(first_frames):.2f} ms in the first half, "
        f"{statistics.median(last_frames):.2f} ms in the last"
    )
    return Timing((seen[lines - 1] - seen[0]) / 1000, first, last, extra)


async def tui(pieces: list[str], tmp: Path) -> Timing:
    settings = programmatic_settings(Choices(provider="bench", data_dir=tmp, work_dir=tmp))
    app = ChatApp(settings, SessionOptions(persist=False), InputHistory(None))
    app._open = _no_session  # type: ignore[method-assign]  # rendering only: no model, no session
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.conversation
        await view.user("write a long answer")
        start = drawn = time.perf_counter()
        for text in pieces:
            await view.show(TextDelta(text))
            await asyncio.sleep(0)  # the app's messages run between deltas, as in a session
            if time.perf_counter() - drawn >= FRAME_S:
                await pilot._wait_for_screen()  # every message handled (the widgets updated)
                app.screen._on_timer_update()  # a frame composed and written out
                drawn = time.perf_counter()
        view.end_stream()  # what the answer held back is drawn
        await pilot._wait_for_screen()
        app.screen._on_timer_update()
        end = time.perf_counter()
    return Timing(end - start)


async def _no_session() -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--delay", type=float, default=0.002, help="seconds between deltas in the paced run"
    )
    args = parser.parse_args()
    pieces = answer(args.lines)
    size = sum(len(p) for p in pieces)
    print(f"answer: {args.lines} lines, {size / 1000:.0f} KB, {len(pieces)} deltas")
    ratios: list[float] = []
    for run in range(args.runs):  # the two surfaces take turns
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            page = asyncio.run(web(pieces, Path(a) / "fast", 0.0))
            paced = asyncio.run(web(pieces, Path(a) / "paced", args.delay))
            term = asyncio.run(tui(pieces, Path(b)))
        print(f"run {run + 1}:")
        print(f"  web page: first delta to last line {page.total_s:.2f} s ({page.extra})")
        print(f"  web page, {args.delay * 1000:g} ms between deltas: {paced.extra}")
        print(
            f"  web page, {args.delay * 1000:g} ms between deltas: render time while the first "
            f"half arrived {paced.first_s:.3f} s, the last half {paced.last_s:.3f} s, "
            f"last/first {paced.last_s / paced.first_s:.2f} (target <= 1)"
        )
        print(f"  terminal UI: first delta to last line {term.total_s:.2f} s")
        ratios.append(page.total_s / term.total_s)
        print(f"  web / terminal UI: {ratios[-1]:.2f}")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= TARGET_RATIO else "over"
    print(f"median web / terminal UI over {len(ratios)} runs: {ratio:.2f} (target <= 2): {verdict}")


if __name__ == "__main__":
    main()
