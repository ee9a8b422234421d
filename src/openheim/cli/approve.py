"""Asking the user about a tool call on the controlling terminal (``/dev/tty``).

The question goes to the terminal itself, not to stdin/stdout, so a piped stdin and a redirected
stdout keep working. With no controlling terminal there is no resolver at all: the core then
denies at once (fail closed) instead of waiting for input that cannot come.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from openheim.approval import Allow, ApprovalRequest, Ask, Deny

MAX_SHOWN = 4000
CHOICES = "[y]es / [n]o / [a]lways / [c]ancel"


@dataclass
class Terminal:
    """The controlling terminal, opened once for reading and once for writing."""

    reader: IO[str]
    writer: IO[str]

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def open_terminal(path: str = "/dev/tty") -> Terminal | None:
    """The controlling terminal, or None when the process has none (headless)."""
    try:
        reader = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        return None
    try:
        writer = open(path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        reader.close()
        return None
    return Terminal(reader, writer)


class TerminalResolver:
    """Settles ``Ask`` verdicts by asking on a terminal; "cancel" stops the whole run."""

    def __init__(self, terminal: Terminal, cancel: asyncio.Event) -> None:
        self.terminal = terminal.writer
        self.source = terminal.reader
        self.cancel = cancel

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
        """Read in a daemon thread, so a run cancelled meanwhile can still exit."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        def settle(line: str) -> None:
            if not done.done():
                done.set_result(line)

        def read() -> None:
            loop.call_soon_threadsafe(settle, self.source.readline())

        threading.Thread(target=read, name="approval-prompt", daemon=True).start()
        return await done


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
