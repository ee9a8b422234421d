"""A folder of the path swapped for a symlink to outside while the file tools use it.

A separate process flips ``work/race`` between a real folder and a symlink to a folder outside
the work dir, each flip one atomic exchange with a prepared name (``renameat2`` with
``RENAME_EXCHANGE``, so ``race`` is never missing), while the tools read, write,
edit, list, glob, search and stage-and-apply below ``race/`` a bounded number of times. No call
may return the outside folder's content or names, and nothing outside may change. Each
operation is one row of ``OPERATIONS``.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.safety.staging import StagingArea, staging_tools
from openheim.tools.base import Tool, ToolContext, ToolOutput
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.builtin.listing import glob, list_dir
from openheim.tools.builtin.search import search
from tests.tools.support import call, ok

INSIDE = "decoy inside\nmarker\n"
OUTSIDE = "decoy OUTSIDE\nmarker\n"
OUTSIDE_NAME = "outside-only.txt"
CALLS = 400
"""Tool calls per operation; the swapper flips for as long as they run."""
SWAP_SECONDS = 30.0
"""The most the swapper runs, and the calls with it (a safety net: they take about a second)."""
AT_FDCWD = -100
RENAME_EXCHANGE = 2
SWAP_FLIPS = 2_000_000

SWAPPER = """
import ctypes, os, sys, time
os.chdir(sys.argv[1])
rename_exchange = ctypes.CDLL(None, use_errno=True).renameat2
deadline = time.monotonic() + float(sys.argv[2])
flips = 0
print("ready", flush=True)
while flips < int(sys.argv[3]) and time.monotonic() < deadline and not os.path.exists("stop"):
    # AT_FDCWD, RENAME_EXCHANGE: "race" is always there, a folder or the link, never missing
    if rename_exchange(-100, b"race", -100, b"race.link", 2) != 0:
        sys.exit(f"renameat2 failed: {os.strerror(ctypes.get_errno())}")
    flips += 1
print(flips, flush=True)
"""


@dataclass
class Tally:
    """How the calls of one operation ended."""

    done: int = 0
    refused: int = 0
    leaked: int = 0


Operation = Callable[[ToolContext, int], Awaitable[str]]


async def read(ctx: ToolContext, i: int) -> str:
    return await ok(read_file, ctx, path="race/decoy.txt")


def shown(output: ToolOutput) -> str:
    """The result text and both sides of its diff: all a caller would see."""
    diff = output.diff
    sides = "" if diff is None else f"{diff.old_text}{diff.new_text}"
    assert not output.is_error, output.content
    return output.content + sides


async def write(ctx: ToolContext, i: int) -> str:
    name = "race/decoy.txt" if i % 2 else f"race/new-{i}.txt"
    return shown(await call(write_file, ctx, path=name, content=f"decoy written {i}\n"))


async def edit(ctx: ToolContext, i: int) -> str:
    # each edit adds a dot, so "marker" stays unique and the next edit finds it again
    args = {"path": "race/decoy.txt", "old_string": "marker", "new_string": "marker."}
    return shown(await call(edit_file, ctx, **args))


async def listing(ctx: ToolContext, i: int) -> str:
    return await ok(list_dir, ctx, path="race")


async def globbing(ctx: ToolContext, i: int) -> str:
    return await ok(glob, ctx, pattern="**", path="race")


async def searching(ctx: ToolContext, i: int) -> str:
    return await ok(search, ctx, pattern="decoy", path="race")


def _tool(tools: list[Tool], name: str) -> Tool:
    return next(t for t in tools if t.name == name)


async def staged(ctx: ToolContext, i: int) -> str:
    tools = staging_tools(StagingArea("race"))
    path = "race/decoy.txt" if i % 2 else f"race/staged-{i}.txt"
    preview = await ok(_tool(tools, "preview_write_file"), ctx, path=path, content=f"s{i}\n")
    token = preview.split("as token ", 1)[1].split(";", 1)[0]
    return preview + await ok(_tool(tools, "apply_file_change"), ctx, token=token)


OPERATIONS: dict[str, Operation] = {
    "read_file": read,
    "write_file": write,
    "edit_file": edit,
    "list_dir": listing,
    "glob": globbing,
    "search": searching,
    "preview_and_apply": staged,
}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("outside")
    (place / "decoy.txt").write_text(OUTSIDE)
    (place / OUTSIDE_NAME).write_text("decoy OUTSIDE\n")
    return place.resolve()


@pytest.fixture
def swapper(work: Path, outside: Path) -> Iterator[subprocess.Popen[str]]:
    """The flipping process, started and seen running before the test's calls begin."""
    (work / "race").mkdir()
    (work / "race" / "decoy.txt").write_text(INSIDE)
    (work / "race.link").symlink_to(outside, target_is_directory=True)
    args = [str(work), str(SWAP_SECONDS), str(SWAP_FLIPS)]
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    yield proc
    (work / "stop").touch()
    proc.wait(timeout=SWAP_SECONDS + 10)


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (``renameat2`` with ``RENAME_EXCHANGE``), as the swapper does."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, bytes(a), AT_FDCWD, bytes(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 failed")


def leaked(text: str) -> bool:
    return "OUTSIDE" in text or OUTSIDE_NAME in text


@pytest.mark.parametrize("name", OPERATIONS)
async def test_a_parent_swapped_for_a_symlink_never_leads_outside(
    name: str, ctx: ToolContext, outside: Path, swapper: subprocess.Popen[str]
) -> None:
    before = snapshot(outside)
    tally = Tally()
    deadline = time.monotonic() + SWAP_SECONDS
    for i in range(CALLS):
        if time.monotonic() > deadline:
            break
        try:
            text = await OPERATIONS[name](ctx, i)
        except ToolError:
            tally.refused += 1
            continue
        tally.done += 1
        tally.leaked += leaked(text)
    (ctx.cwd / "stop").touch()
    assert swapper.stdout is not None
    flips = int(swapper.stdout.read().strip() or "0")
    changed = sorted(k for k, v in snapshot(outside).items() if before.get(k) != v)
    assert (tally.leaked, changed) == (0, []), f"{tally} outside files written: {changed}"
    assert flips > 0, f"the swapper never flipped the folder during {tally}"
    if (ctx.cwd / "race").is_symlink():  # the swapper stopped on the link: put the folder back
        exchange(ctx.cwd / "race", ctx.cwd / "race.link")
    assert not leaked(await OPERATIONS[name](ctx, CALLS)), "the folder at rest leads outside"
