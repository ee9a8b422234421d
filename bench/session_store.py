"""Session store: append latency at 10 and at 10,000 messages, and loading a long session.

Appends to a session holding 10 messages and to one holding 10,000 are timed alternately, in
the same database, so drift hits both alike; an append must not slow down as a session grows
(target: p50 ratio at most 1.5). Then the 10,000-message session is loaded with ``messages``
(target: at most 200 ms). Messages look like an agent's: prompts, replies with tool calls, and
tool results of about a kilobyte. All timings are ``time.perf_counter`` in this process, on a
temporary database in WAL mode with ``synchronous=NORMAL`` (the store's own settings).

    .venv/bin/python bench/session_store.py [--samples 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.store.sqlite import SQLiteStore, open_store

SMALL = 10
LARGE = 10_000
RATIO_TARGET = 1.5
LOAD_TARGET_MS = 200.0


def message(i: int) -> Message:
    """The i-th message of a typical agent session: prompt, call, result, call, result, ..."""
    if i % 20 == 0:
        return Message.user(f"step {i}: please refactor the parser module and run the tests")
    if i % 2:
        call = ToolUseBlock(f"call_{i}", "read_file", {"path": f"src/mod_{i}.py", "limit": 200})
        return Message("assistant", (TextBlock(f"Reading module {i} next."), call))
    content = f"line {i}: def handler(request): return response\n" * 20
    return Message("user", (ToolResultBlock(f"call_{i - 1}", content),))


def session_with(store: SQLiteStore, count: int) -> str:
    session_id = store.create(cwd="/bench", provider="openai", model="gpt-4.1").id
    for i in range(count):
        store.append(session_id, message(i))
    return session_id


def timed_append(store: SQLiteStore, session_id: str, item: Message) -> float:
    start = time.perf_counter()
    store.append(session_id, item)
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(label: str, seconds: list[float]) -> float:
    p50, p90 = statistics.median(seconds) * 1e6, percentile(seconds, 0.9) * 1e6
    print(f"append at {label:>6} messages: p50 {p50:7.1f} us   p90 {p90:7.1f} us")
    return p50


def run(samples: int) -> None:
    with tempfile.TemporaryDirectory() as folder, open_store(Path(folder)) as store:
        large = session_with(store, LARGE)
        smalls = [session_with(store, SMALL) for _ in range(samples)]
        small_times: list[float] = []
        large_times: list[float] = []
        for i, small in enumerate(smalls):
            item = message(LARGE + i)  # the same message to both: only the history differs
            pair = [(small, small_times), (large, large_times)]
            for session_id, times in pair if i % 2 else reversed(pair):  # neither always first
                times.append(timed_append(store, session_id, item))
        ratio = report(f"{LARGE:,}", large_times) / report(str(SMALL), small_times)
        print(f"ratio {LARGE:,} / {SMALL}: {ratio:.2f} (target <= {RATIO_TARGET})")

        loads = []
        for _ in range(5):
            start = time.perf_counter()
            count = len(store.messages(large))
            loads.append(time.perf_counter() - start)
        load_ms = statistics.median(loads) * 1e3
        print(f"load {count:,} messages: p50 {load_ms:.1f} ms (target <= {LOAD_TARGET_MS:.0f} ms)")
        ok = ratio <= RATIO_TARGET and load_ms <= LOAD_TARGET_MS
        print("PASS" if ok else "FAIL")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300, help="timed appends per size")
    run(parser.parse_args().samples)


if __name__ == "__main__":
    main()
