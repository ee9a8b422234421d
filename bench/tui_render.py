"""Render cost per streamed delta in the terminal UI, across one long answer.

A 5,000-delta answer (prose, lists and a fenced code block every so often) is fed event by
event into the conversation view of a headless ``ChatApp`` (Textual's test driver); after each
delta the app handles every pending message and composes and writes a frame, all timed. The
answer draws at most once a frame (1/30 s), so the deltas between two draws cost only their
bookkeeping and the one that draws costs the parse and layout: the mean is the cost per delta,
p99 about the cost of a draw. Prints the
mean and p90 cost per delta of the first and of the last thousand, and their ratio: the cost
must not grow with the answer's length.

Target: at most 2 ms per delta, ratio about 1.

    .venv/bin/python bench/tui_render.py [--deltas 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from openheim.chat.history import InputHistory
from openheim.events import TextDelta
from openheim.runtime import SessionOptions
from openheim.runtime.settings import Choices, programmatic_settings
from openheim.tui.app import ChatApp

TARGET_MS = 2.0
WORDS = "the quick brown fox jumps over the lazy dog while the agent reads files"
WINDOW = 1000


def pieces(count: int) -> list[str]:
    """``count`` deltas of a long Markdown answer: a paragraph, a list, a code block, again."""
    words = WORDS.split(" ")
    out: list[str] = []
    for n in range(count):
        if n % 200 == 0:
            out.append(f"\n\n```python\ndef step_{n}(x):\n    return x * 2\n```\n\n")
        elif n % 50 == 0:
            out.append(f"\n\n- item {n}\n- another item\n\n")
        else:
            out.append(words[n % len(words)] + " ")
    return out


async def measure(count: int, data: Path) -> tuple[list[float], list[float]]:
    """Milliseconds per delta, in order: wall time, and this process's CPU time (steadier on a
    shared machine)."""
    settings = programmatic_settings(Choices(provider="bench", data_dir=data, work_dir=data))
    app = ChatApp(settings, SessionOptions(persist=False), InputHistory(None))
    app._open = _no_session  # type: ignore[method-assign]  # rendering only: no model, no session
    costs: list[float] = []
    cpu: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.conversation
        await view.user("write a long answer")
        for text in pieces(count):
            start, start_cpu = time.perf_counter(), time.process_time()
            await view.show(TextDelta(text))
            await pilot._wait_for_screen()  # every message handled (the widgets updated)
            app.screen._on_timer_update()  # and the frame composed and written out
            costs.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        view.end_stream()
    return costs, cpu


async def _no_session() -> None:
    return None


def summary(name: str, costs: list[float]) -> str:
    ordered = sorted(costs)
    p90, p99 = (ordered[int(q * (len(ordered) - 1))] for q in (0.9, 0.99))
    return (
        f"{name}: mean {statistics.fmean(costs):.3f} ms, p90 {p90:.3f} ms, "
        f"p99 {p99:.3f} ms per delta"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wall, cpu = asyncio.run(measure(args.deltas, Path(tmp)))
    for name, costs in (("wall", wall), ("cpu", cpu)):
        first, last = costs[:WINDOW], costs[-WINDOW:]
        print(summary(f"{name}, first {len(first)} deltas", first))
        print(summary(f"{name}, last {len(last)} deltas", last))
        ratio = statistics.fmean(last) / statistics.fmean(first)
        worst = max(statistics.fmean(first), statistics.fmean(last))
        verdict = "ok" if worst <= TARGET_MS else "over"
        print(f"{name}: last/first ratio {ratio:.2f}; target {TARGET_MS} ms per delta: {verdict}")


if __name__ == "__main__":
    main()
