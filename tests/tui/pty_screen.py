"""A child process on a pseudo-terminal, its screen read through ``pyte``: what a person would
see in a real terminal."""

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
            self.stream.feed(data)

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
                return code
        self.process.kill()
        raise AssertionError(f"the process did not exit; the screen:\n{self.text()}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        os.close(self.master)
        os.close(self.slave)
