"""A search that takes many seconds although RE2 matches in linear time, to drive cancellation
end to end: lines of 64 KiB of random ``a`` and ``b`` against ``a[ab]{200}c``, for which RE2's
DFA gives up and its NFA runs at about a microsecond a byte. How far the agent got is read from
the bytes it has read (``/proc/PID/io``), so a test acts while the search is surely running."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from openheim.testing import FakeReply, FakeToolCall

PATTERN = "a[ab]{200}c"
FILE_BYTES = 8 * 1024 * 1024
FILES = ("a.txt", "b.txt", "c.txt")
SEARCH = FakeReply(tool_calls=[FakeToolCall("search", {"pattern": PATTERN})])
_AB = bytes(ord("a") if i % 2 else ord("b") for i in range(256))


def plant(work: Path) -> None:
    """Files the search spends seconds on each (a few on a fast machine, more here)."""
    line = 64 * 1024
    for name in FILES:
        data = os.urandom(FILE_BYTES).translate(_AB)
        (work / name).write_bytes(b"\n".join(data[i : i + line] for i in range(0, len(data), line)))


def bytes_read(pid: int) -> int:
    """What process ``pid`` has read so far, from ``/proc/PID/io``."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar in /proc/{pid}/io")


async def searching(pid: int, before: int) -> None:
    """Return once ``pid`` has read a whole planted file since ``before`` (its search runs)."""
    for _ in range(3000):
        if bytes_read(pid) - before >= FILE_BYTES:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the search never started reading the planted files")
