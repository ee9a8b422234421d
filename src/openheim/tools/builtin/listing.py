"""Listing tools: ``list_dir`` and ``glob``.

Walks never follow a symlinked directory (it could lead out of the work dir) and skip ``.git``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.decorator import tool

MAX_ENTRIES = 1000
SKIP_DIRS = frozenset({".git"})


def _entry(path: Path) -> str:
    if path.is_symlink():
        return f"{path.name} -> {path.readlink()}"
    return f"{path.name}/" if path.is_dir() else path.name


def _list(target: Path, shown: str) -> str:
    if not target.is_dir():
        what = "does not exist" if not target.exists() else "is not a directory"
        raise ToolError(f"{shown} {what}", hint="list_dir takes a directory path")
    entries = sorted(target.iterdir(), key=lambda p: p.name)
    lines = [_entry(p) for p in entries[:MAX_ENTRIES]]
    if len(entries) > MAX_ENTRIES:
        lines.append(f"[{len(entries) - MAX_ENTRIES} more entries not shown; use glob to filter]")
    return "\n".join(lines) if lines else f"{shown} is empty"


@tool(read_only=True, kind=ToolKind.READ)
async def list_dir(
    ctx: ToolContext,
    path: Annotated[str, "Directory to list, relative to the working directory"] = ".",
) -> str:
    """List a directory: one entry per line, sorted; directories end with '/', symlinks show
    their target."""
    target = ctx.path(path)
    return await asyncio.to_thread(_list, target, ctx.display(target))


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over '/'-separated relative paths: ``**`` spans directories."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : close].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def walk_files(root: Path) -> Iterator[Path]:
    """Every file below ``root`` in sorted order, without following symlinked directories."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            yield Path(folder, name)


def _glob(ctx: ToolContext, base: Path, pattern: str) -> str:
    if not base.is_dir():
        raise ToolError(f"{ctx.display(base)} is not a directory", hint="glob searches a folder")
    regex = glob_regex(pattern.lstrip("/"))
    found = sorted(
        ctx.display(p) for p in walk_files(base) if regex.match(p.relative_to(base).as_posix())
    )
    if not found:
        return f"no files match {pattern!r} under {ctx.display(base)}"
    shown = found[:MAX_ENTRIES]
    if len(found) > MAX_ENTRIES:
        shown.append(f"[{len(found) - MAX_ENTRIES} more matches not shown; narrow the pattern]")
    return "\n".join(shown)


@tool(read_only=True, kind=ToolKind.SEARCH)
async def glob(
    ctx: ToolContext,
    pattern: Annotated[str, "Glob pattern such as '**/*.py' or 'src/*.md' ('**' spans folders)"],
    path: Annotated[str, "Directory to search from, relative to the working directory"] = ".",
) -> str:
    """Find files by name pattern. Returns matching paths relative to the working directory,
    sorted, at most 1000."""
    if not pattern.strip():
        raise ToolError("pattern is empty", hint="pass a pattern such as '**/*.py'")
    base = ctx.path(path)
    return await asyncio.to_thread(_glob, ctx, base, pattern)
