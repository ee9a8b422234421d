"""Finding processes on the host, whether they run confined in the shell sandbox or not.

Inside the sandbox a command sees the PIDs of its own namespace, so ``echo $$`` means nothing
outside; a ``sleep`` with a unique argument is found on the host by that argument instead.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped by someone else counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def wait_until(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


class Sleeper:
    """A ``sleep`` with a unique argument, found on the host by it (in or out of a sandbox)."""

    def __init__(self, seconds: int = 1000) -> None:
        self.arg = f"{seconds}.{uuid.uuid4().int % 10**9:09d}"
        self.command = f"sleep {self.arg}"
        self.wait = f"until pgrep -fx '{self.command}' >/dev/null; do sleep 0.01; done"
        """Shell code that returns once the sleep runs."""

    def pids(self) -> list[int]:
        """Host pids of the live processes running this sleep."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", self.arg.encode()] and alive(int(entry.name)):
                found.append(int(entry.name))
        return found

    def running(self) -> bool:
        return bool(self.pids())

    def kill(self) -> None:
        for pid in self.pids():
            os.kill(pid, 9)
