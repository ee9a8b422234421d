"""Asking the user about a tool call on the controlling terminal (``/dev/tty``).

The question goes to the terminal itself, not to stdin/stdout, so a piped stdin and a redirected
stdout keep working. With no controlling terminal there is no resolver at all: the core then
denies at once (fail closed) instead of waiting for input that cannot come.

The answer is read from a non-blocking descriptor watched by the event loop, not by a thread
blocked in ``read``: a run stopped while the question waits (Ctrl-C, SIGTERM) then simply stops
waiting, and nothing is left holding the terminal when openheim exits.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import IO

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.runtime import approvals

CHOICES = " / ".join([*(f"[{c.key}] {c.label}" for c in approvals.CHOICES), "[c] cancel"])
"""The prompt line: the vocabulary's keys, and cancel (stops the whole run; terminal only)."""


@dataclass
class Terminal:
    """The controlling terminal: a non-blocking descriptor to read from, a file to write to."""

    reader: int
    writer: IO[str]

    def close(self) -> None:
        os.close(self.reader)
        self.writer.close()


def open_terminal(path: str = "/dev/tty") -> Terminal | None:
    """The controlling terminal, or None when the process has none (headless)."""
    try:
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        writer = open(path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        os.close(reader)
        return None
    return Terminal(reader, writer)


class TerminalResolver:
    """Settles ``Ask`` verdicts by asking on a terminal; "cancel" stops the whole run."""

    def __init__(self, terminal: Terminal, cancel: asyncio.Event) -> None:
        self.terminal = terminal.writer
        self.source = terminal.reader
        self.cancel = cancel
        self._typed = bytearray()
        """What was read past the last answer's end of line (typed ahead)."""

    async def __call__(self, request: ApprovalRequest, verdict: Ask) -> Allow | Deny:
        self.terminal.write(describe(request, verdict))
        while True:
            self.terminal.write(f"{CHOICES}: ")
            self.terminal.flush()
            line = await self._read_line()
            if line.strip().lower() in ("c", "cancel"):
                self.cancel.set()
                return Deny("the user cancelled the run")
            answer = approvals.typed_answer(line)
            if answer is not None:
                return answer
            self.terminal.write(f"please answer {approvals.TYPED_HINT}, or c (cancel the run)\n")

    async def _read_line(self) -> str:
        """The next line typed, without waiting in a blocking call (see the module docstring);
        "" once the terminal is closed or hung up."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                chunk = os.read(self.source, 4096)
            except BlockingIOError:
                return
            except OSError:  # EIO: the terminal hung up
                chunk = b""
            self._typed += chunk
            if (not chunk or b"\n" in self._typed) and not done.done():
                done.set_result(None)

        if b"\n" not in self._typed:
            loop.add_reader(self.source, readable)
            try:
                await done
            finally:
                loop.remove_reader(self.source)
        line, _, rest = bytes(self._typed).partition(b"\n")
        self._typed = bytearray(rest)
        return line.decode("utf-8", "replace")


def describe(request: ApprovalRequest, verdict: Ask) -> str:
    """The question on the terminal: its title, the arguments, the risks, the diff."""
    asked = approvals.question(request, verdict)
    lines = ["", asked.title, asked.arguments]
    lines += [f"  ! {reason}" for reason in asked.reasons]
    if asked.diff:
        lines.append(asked.diff)
    return "\n".join(lines) + "\n"
