"""Time to the first frame of ``openheim`` (the chat UI) in a pseudo-terminal.

Each run starts the real ``openheim`` on a pty (100 x 30) with a config pointing at a
FakeLLMServer on loopback, and reads its screen through ``pyte``: the time until the first
frame shows (the footer line is drawn) and until the session is open (the footer names the
model). ``python -c pass`` on the same pty is the baseline. Runs take turns after a warm-up.

Target: first frame at most 0.5 s (on 2 cores).

    .venv/bin/python bench/tui_first_frame.py [--runs 10]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pyte

from openheim.testing import FakeLLMServer

TARGET_S = 0.5
COLUMNS, LINES = 100, 30


def timed_start(argv: list[str], cwd: Path, env: dict[str, str], marks: list[str]) -> list[float]:
    """Seconds from start until each of ``marks`` is on the screen (then the process is
    stopped); an empty ``marks`` waits for the process to end."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True
    )
    seen: list[float] = []
    deadline = start + 30
    try:
        while time.perf_counter() < deadline and (len(seen) < len(marks) or not marks):
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                stream.feed(os.read(master, 65536))
            text = "\n".join(screen.display)
            while len(seen) < len(marks) and marks[len(seen)] in text:
                seen.append(time.perf_counter() - start)
            if not marks and process.poll() is not None:
                return [time.perf_counter() - start]
    finally:
        process.kill()
        process.wait(10)
        os.close(master)
        os.close(slave)
    if len(seen) < len(marks):
        raise RuntimeError(f"never saw {marks[len(seen)]!r}; the screen:\n{text}")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer([]) as server:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        (home / "config.toml").write_text(
            f'default_provider = "fake"\n[providers.fake]\napi_base = "{server.base_url}"\n'
            'default_model = "fake-model"\n'
        )
        (home / "system.md").write_text("bench\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        env |= {"OPENHEIM_HOME": str(home), "TERM": "xterm-256color"}
        chat = [sys.executable, "-m", "openheim"]
        baseline, frame, ready = [], [], []
        for run in range(args.runs + 1):
            base = timed_start([sys.executable, "-c", "pass"], work, env, [])[0]
            first, opened = timed_start(chat, work, env, [" tok", "fake/fake-model"])
            if run:  # the first round warms the caches up
                baseline.append(base)
                frame.append(first)
                ready.append(opened)
    for name, values in (
        ("python -c pass", baseline),
        ("first frame", frame),
        ("session open", ready),
    ):
        ordered = sorted(values)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"{name}: median {statistics.median(values):.3f} s, p90 {p90:.3f} s")
    verdict = "ok" if statistics.median(frame) <= TARGET_S else "over"
    print(f"first frame target {TARGET_S} s: {verdict}")


if __name__ == "__main__":
    main()
