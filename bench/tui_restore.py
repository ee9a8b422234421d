"""Restoring a long session in the terminal UI, and the process's peak memory with it.

A stored session of 2,000 messages (user prompts, Markdown answers with code, and a tool call
with its result every fifth turn) is restored with ``:sessions ID`` in a headless ``ChatApp``:
the session resumed, its conversation replayed into the view and one frame composed. It runs
in a child process so that the peak resident memory (``ru_maxrss``) is this restore's alone.

Targets: restore at most 1.5 s; memory reported.

    .venv/bin/python bench/tui_restore.py [--messages 2000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openheim.chat.history import InputHistory
from openheim.config.load import load_settings
from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.runtime import SessionOptions
from openheim.runtime.commands import Unknown, parse
from openheim.store import open_store
from openheim.tui.app import ChatApp
from openheim.tui.commands import run_command

TARGET_S = 1.5
ANSWER = (
    "Here is what I found in `src/app.py`:\n\n- the loader reads the file twice\n"
    "- the cache is never cleared\n\n```python\ndef load(path):\n    return path.read_text()\n```\n"
)


def conversation(count: int) -> list[Message]:
    """``count`` messages: prompt, (tool call, result,) answer, and so on."""
    messages: list[Message] = []
    turn = 0
    while len(messages) < count:
        messages.append(Message.user(f"question {turn}: what does src/app.py do?"))
        if turn % 5 == 0 and len(messages) + 2 < count:
            call = ToolUseBlock(f"call-{turn}", "read_file", {"path": "src/app.py"})
            messages.append(Message("assistant", (TextBlock("Let me look."), call)))
            result = ToolResultBlock(f"call-{turn}", "def load(path):\n    ...\n" * 20)
            messages.append(Message("user", (result,)))
        messages.append(Message.assistant(f"Answer {turn}. " + ANSWER))
        turn += 1
    return messages[:count]


def prepare(home: Path, count: int) -> str:
    """A config pointing at a loopback server that is never called, and the stored session."""
    (home / "config.toml").write_text(
        'default_provider = "fake"\n[providers.fake]\napi_base = "http://127.0.0.1:9/v1"\n'
        'default_model = "fake-model"\n'
    )
    (home / "system.md").write_text("bench\n")
    store = open_store(home)
    record = store.create(cwd=str(home), provider="fake", model="fake-model")
    for message in conversation(count):
        store.append(record.id, message)
    store.close()
    return record.id


async def restore(home: Path, session_id: str) -> float:
    """Seconds from ``:sessions ID`` to the replayed conversation's first frame."""
    settings = load_settings(cwd=home, env={"OPENHEIM_HOME": str(home)})
    app = ChatApp(settings, SessionOptions(persist=True), InputHistory(None))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(500):
            if app.ready:
                break
            await pilot.pause(0.01)
        start = time.perf_counter()
        command = parse(f":sessions {session_id}", "tui")
        assert command is not None and not isinstance(command, Unknown)
        await run_command(app, command)
        await pilot._wait_for_screen()
        app.screen._on_timer_update()
        elapsed = time.perf_counter() - start
        assert app.chat.session.id == session_id
    return elapsed


def child(home: Path, session_id: str) -> None:
    elapsed = asyncio.run(restore(home, session_id))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "peak_mb": peak_mb}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("HOME", "ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1])
        return
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session_id = prepare(home, args.messages)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        results = []
        for _ in range(args.runs):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(home), session_id],
                capture_output=True, text=True, check=True, env=env, cwd=home,
            )  # fmt: skip
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    seconds = [r["seconds"] for r in results]
    peak = max(r["peak_mb"] for r in results)
    verdict = "ok" if statistics.median(seconds) <= TARGET_S else "over"
    runs = ", ".join(f"{s:.3f}" for s in seconds)
    median = statistics.median(seconds)
    print(f"restore {args.messages} messages: median {median:.3f} s (runs: {runs})")
    print(f"target {TARGET_S} s: {verdict}")
    print(f"peak memory of the process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
