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
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from openheim.approval import Allow, ApprovalRequest, Ask, Deny

MAX_SHOWN = 4000
CHOICES = "[y]es / [n]o / [a]lways / [c]ancel"


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
            self.terminal.write(f"Allow {request.tool}? {CHOICES}: ")
            self.terminal.flush()
            answer = (await self._read_line()).strip().lower()
            if answer in ("y", "yes"):
                return Allow()
            if answer in ("a", "always"):
                return Allow(always=True)
            if answer in ("n", "no", ""):
                return Deny("the user said no to this tool call")
            if answer in ("c", "cancel"):
                self.cancel.set()
                return Deny("the user cancelled the run")
            self.terminal.write("please answer y, n, a or c\n")

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
    """What the user is asked about: the tool, its arguments, why, and a diff for edits."""
    lines = [f"\nopenheim wants to run {request.tool}"]
    shown = json.dumps(dict(request.arguments), indent=2, ensure_ascii=False)
    lines.append(shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN] + "\n…")
    lines += [f"  ! {reason}" for reason in verdict.reasons]
    if verdict.prompt:
        lines.append(verdict.prompt)
    if verdict.detail:
        detail = verdict.detail
        lines.append(detail if len(detail) <= MAX_SHOWN else detail[:MAX_SHOWN] + "\n…")
    diff = edit_diff(request)
    if diff:
        lines.append(diff if len(diff) <= MAX_SHOWN else diff[:MAX_SHOWN] + "\n…")
    return "\n".join(lines) + "\n"


def edit_diff(request: ApprovalRequest) -> str:
    """A unified diff of what a write_file / edit_file call would change, else ''."""
    args = request.arguments
    raw = args.get("path")
    if request.tool not in ("write_file", "edit_file") or not isinstance(raw, str):
        return ""
    path = Path(request.cwd or ".") / raw
    try:
        before = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        return ""
    after = _after(request.tool, before, args)
    if after is None:
        return ""
    import difflib

    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{raw}", f"b/{raw}"
    )
    return "".join(diff)


def _after(tool: str, before: str, args: Mapping[str, Any]) -> str | None:
    if tool == "write_file":
        content = args.get("content")
        return content if isinstance(content, str) else None
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or old not in before:
        return None
    return before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)
