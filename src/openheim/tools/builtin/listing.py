"""Listing tools: ``list_dir`` and ``glob``.

Neither follows a symlinked folder (it could lead out of the work dir); ``glob`` skips ``.git``.
Folders are opened from a descriptor of the work dir, one component at a time (``fs.walk``).
Both run in a worker with a time limit that a cancelled call leaves at once (``bounded.py``);
``glob`` matches with RE2 (``patterns.py``), in time linear in each path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.builtin.bounded import Budget, run_bounded
from openheim.tools.builtin.fs import kind_of, read_error, walk
from openheim.tools.builtin.patterns import GlobPattern
from openheim.tools.decorator import tool
from openheim.tools.sandbox import PathSandbox

MAX_ENTRIES = 1000
MAX_MATCHES = 1000


def _describe(entry: os.DirEntry[str], folder: int) -> str:
    try:
        if entry.is_symlink():
            return f"{entry.name} -> {os.readlink(entry.name, dir_fd=folder)}"
        return f"{entry.name}/" if entry.is_dir(follow_symlinks=False) else entry.name
    except OSError:
        return entry.name


def _list(sandbox: PathSandbox, target: Path, shown: str, budget: Budget) -> str:
    try:
        with sandbox.folder(target) as folder, os.scandir(folder) as it:
            entries = sorted(_until(it, budget, shown), key=lambda e: e.name)
            lines = [_describe(e, folder) for e in entries[:MAX_ENTRIES]]
    except NotADirectoryError:
        raise ToolError(f"{shown} is a file, not a directory", hint="use read_file") from None
    except OSError as err:
        raise read_error(err, shown) from None
    if not entries:
        return f"[{shown} is empty]"
    if len(entries) > MAX_ENTRIES:
        lines.append(
            f"[{len(entries) - MAX_ENTRIES} more entries not shown; "
            "use glob with a pattern to find specific files]"
        )
    return "\n".join(lines)


def _until(
    entries: Iterator[os.DirEntry[str]], budget: Budget, shown: str
) -> list[os.DirEntry[str]]:
    """The entries of a scan, unless the time runs out first."""
    out = []
    for entry in entries:
        if budget.is_set():
            raise _too_slow(budget, shown)
        out.append(entry)
    return out


def _too_slow(budget: Budget, shown: str) -> ToolError:
    return ToolError(
        f"listing {shown} did not finish within {budget.seconds:g} s",
        hint="use glob with a pattern to find specific files",
    )


@tool(read_only=True, kind=ToolKind.READ)
async def list_dir(
    ctx: ToolContext,
    path: Annotated[str, "Directory to list, relative to the working directory"] = ".",
) -> str:
    """List one directory (not recursive): one entry per line, sorted by name; folders end with
    '/', symlinks show as 'name -> target'. At most 1000 entries are shown; use glob to find files
    in a large or nested tree."""
    target = ctx.path(path)
    shown = ctx.display(target)

    def overrun(budget: Budget) -> str:
        raise _too_slow(budget, shown)

    return await run_bounded(lambda budget: _list(ctx.sandbox, target, shown, budget), overrun)


def _glob(
    ctx: ToolContext, base: Path, pattern: GlobPattern, found: list[str], budget: Budget
) -> str:
    kind = kind_of(ctx.sandbox, base)
    if kind != "dir":
        what = "does not exist" if kind is None else "is not a directory"
        raise ToolError(f"{ctx.display(base)} {what}", hint="set path to a folder to search in")
    for entry in walk(ctx.sandbox, base, descend=lambda e: pattern.may_contain(e.rel), stop=budget):
        if entry.kind == "dir" or not pattern.matches(entry.rel):
            continue
        if len(found) == MAX_MATCHES:
            found.append(
                f"[stopped at {MAX_MATCHES} matches; narrow the pattern or set path to a subfolder]"
            )
            break
        found.append(ctx.display(entry.path))
    return _glob_report(ctx.display(base), pattern, list(found), budget)


def _glob_report(shown: str, pattern: GlobPattern, found: list[str], budget: Budget) -> str:
    lines = found or [f"no files match {pattern.text!r} under {shown}"]
    if budget.expired and len(found) <= MAX_MATCHES:  # not already cut at MAX_MATCHES
        lines.append(budget.note("narrow the pattern or set path to a subfolder"))
    return "\n".join(lines)


@tool(read_only=True, kind=ToolKind.SEARCH)
async def glob(
    ctx: ToolContext,
    pattern: Annotated[
        str, "Glob such as '**/*.py' or 'src/*/test_?.py'; '**' spans any number of folders"
    ],
    path: Annotated[str, "Folder the pattern is relative to (default: working directory)"] = ".",
) -> str:
    """Find files (not folders) whose path matches a glob pattern. Supports '*' (within one
    folder name), '?', '[abc]' and '**' (zero or more folders). Returns paths relative to the work
    dir, sorted, at most 1000; '.git' is skipped and symlinked folders are not entered. To search
    file contents use search."""
    compiled = GlobPattern(pattern.removeprefix("./"))
    base = ctx.path(path)
    shown = ctx.display(base)
    found: list[str] = []
    return await run_bounded(
        lambda budget: _glob(ctx, base, compiled, found, budget),
        lambda budget: _glob_report(shown, compiled, list(found), budget),
    )
