"""A child process on a pseudo-terminal, its screen read through ``pyte``: what a person would
see in a real terminal. Like most terminals today it says it supports synchronized output, so
a Textual program wraps each frame in ``SYNC_START``/``SYNC_END``; the screen takes a frame
only once it is whole (a frame split across reads never shows half drawn)."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyte

SYNC_QUERY = b"\x1b[?2026$p"
SYNC_SUPPORTED = b"\x1b[?2026;2$y"
"""The answer to ``SYNC_QUERY``: synchronized output is supported (and off until asked)."""
SYNC_START = b"\x1b[?2026h"
SYNC_END = b"\x1b[?2026l"


class PtyScreen:
    """``argv`` running on a pty of ``columns`` x ``lines``; ``read`` feeds its output to the
    emulated screen."""

    def __init__(
        self, argv: Sequence[str], cwd: Path, env: dict[str, str], columns: int, lines: int
    ) -> None:
        self.master, self.slave = os.openpty()
        size = struct.pack("HHHH", lines, columns, 0, 0)
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, size)
        self.original = termios.tcgetattr(self.slave)
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.pending = bytearray()
        """Output not on the screen yet: the start of a frame still being written."""
        self.answered = False
        self.process = subprocess.Popen(
            list(argv),
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            cwd=cwd,
            env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(lines)},
            start_new_session=True,
            preexec_fn=self._controlling,
        )

    def _controlling(self) -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    def read(self, timeout: float = 0.1) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            self.raw += data
            self.pending += data
            self._answer()
            self._feed_frames()

    def _answer(self) -> None:
        if not self.answered and SYNC_QUERY in self.raw:
            self.answered = True
            os.write(self.master, SYNC_SUPPORTED)

    def _feed_frames(self, everything: bool = False) -> None:
        """Put on the screen all the output but a frame begun and not ended yet (or what may be
        the first bytes of its ``SYNC_START``)."""
        start = self.pending.rfind(SYNC_START)
        whole = everything or start < 0 or self.pending.find(SYNC_END, start) >= 0
        cut = len(self.pending) if whole else start
        if whole and not everything:
            cut -= max(
                (k for k in range(1, len(SYNC_START)) if self.pending.endswith(SYNC_START[:k])),
                default=0,
            )
        self.stream.feed(bytes(self.pending[:cut]))
        del self.pending[:cut]

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, needle: str, timeout: float = 20.0) -> None:
        self._wait(lambda: needle in self.text(), f"{needle!r} never appeared", timeout)

    def wait_gone(self, needle: str, timeout: float = 20.0) -> None:
        """Wait until ``needle`` is no longer on the screen (a busy footer, say)."""
        self._wait(lambda: needle not in self.text(), f"{needle!r} never went away", timeout)

    def wait_prompt(self, prompt: str = "> ", timeout: float = 20.0) -> None:
        """Wait until the cursor stands right after ``prompt`` at the start of its line: the
        program waits for a line (a prompt seen earlier in the scrollback does not count)."""
        cursor = self.screen.cursor

        def prompting() -> bool:
            return self.screen.display[cursor.y][: cursor.x] == prompt

        self._wait(prompting, f"no {prompt!r} prompt at the cursor", timeout)

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        """Wait, reading the screen, until ``check()`` holds (a state, not a single text)."""
        self._wait(check, f"timed out waiting for {what}", timeout)

    def _wait(self, check: Callable[[], bool], failure: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            if check():
                return
        raise AssertionError(f"{failure}; the screen:\n{self.text()}")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_exit(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read(0.05)
            code = self.process.poll()
            if code is not None:
                self.read(0.2)
                self._feed_frames(everything=True)
                return code
        self.process.kill()
        raise AssertionError(f"the process did not exit; the screen:\n{self.text()}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        os.close(self.master)
        os.close(self.slave)
