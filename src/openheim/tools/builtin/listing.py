"""Listing tools: ``list_dir`` and ``glob``.

Neither follows a symlinked folder (it could lead out of the work dir); ``glob`` skips ``.git``.
Folders are opened from a descriptor of the work dir, one component at a time (``fs.walk``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.builtin.fs import kind_of, read_error, run_blocking, walk
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


def _list(sandbox: PathSandbox, target: Path, shown: str) -> str:
    try:
        with sandbox.folder(target) as folder, os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
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


@tool(read_only=True, kind=ToolKind.READ)
async def list_dir(
    ctx: ToolContext,
    path: Annotated[str, "Directory to list, relative to the working directory"] = ".",
) -> str:
    """List one directory (not recursive): one entry per line, sorted by name; folders end with
    '/', symlinks show as 'name -> target'. At most 1000 entries are shown; use glob to find files
    in a large or nested tree."""
    target = ctx.path(path)
    return await asyncio.to_thread(_list, ctx.sandbox, target, ctx.display(target))


def _glob(ctx: ToolContext, base: Path, pattern: GlobPattern, stop: threading.Event) -> str:
    kind = kind_of(ctx.sandbox, base)
    if kind != "dir":
        what = "does not exist" if kind is None else "is not a directory"
        raise ToolError(f"{ctx.display(base)} {what}", hint="set path to a folder to search in")
    found: list[str] = []
    for entry in walk(ctx.sandbox, base, descend=lambda e: pattern.may_contain(e.rel), stop=stop):
        if entry.kind == "dir" or not pattern.matches(entry.rel):
            continue
        if len(found) == MAX_MATCHES:
            found.append(
                f"[stopped at {MAX_MATCHES} matches; narrow the pattern or set path to a subfolder]"
            )
            break
        found.append(ctx.display(entry.path))
    if not found:
        return f"no files match {pattern.text!r} under {ctx.display(base)}"
    return "\n".join(found)


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
    return await run_blocking(lambda stop: _glob(ctx, base, compiled, stop))
