"""Helpers for store tests: sample messages and child processes that signal over a pipe."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


def call(call_id: str, name: str = "read_file", **arguments: object) -> Message:
    """An assistant message making one tool call."""
    return Message("assistant", (TextBlock("checking"), ToolUseBlock(call_id, name, arguments)))


def result(call_id: str, content: str = "ok", *, is_error: bool = False) -> Message:
    return Message("user", (ToolResultBlock(call_id, content, is_error),))


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A second, autocommit connection to a store's file, closed afterwards."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


class Child:
    """A Python child process running ``code``; it reports over stdout, one line per event.

    The code gets ``db`` (the database path) and ``signal(text)``, which writes a line and
    flushes; it should end by blocking on ``sys.stdin.read()`` so the parent decides when it
    stops (SIGKILL, or closing stdin).
    """

    def __init__(self, db: Path | str, code: str) -> None:
        prelude = (
            "import sys\n"
            f"db = {str(db)!r}\n"
            "def signal(text):\n"
            "    sys.stdout.write(text + '\\n')\n"
            "    sys.stdout.flush()\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", prelude + textwrap.dedent(code)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def expect(self, line: str) -> None:
        """Block until the child writes ``line`` (pytest's timeout bounds the wait)."""
        assert self.process.stdout is not None
        got = self.process.stdout.readline().strip()
        assert got == line, f"child said {got!r}, expected {line!r}"

    def kill(self) -> None:
        """SIGKILL the child and reap it, so its pid is gone."""
        self.process.kill()
        self.process.wait(timeout=30)
        self._close_pipes()

    def finish(self) -> int:
        """Close the child's stdin (it returns from its read) and wait for it."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=30)
        self._close_pipes()
        return code

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
