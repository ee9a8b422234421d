"""File tools: ``read_file``, ``write_file`` and ``edit_file``.

Paths go through the sandbox; writes are atomic (temp file + rename) and keep the file's mode.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.fsutil import atomic_write
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.decorator import tool

MAX_READ_BYTES = 100 * 1024
BINARY_PROBE = 8192


def _read_text(path: Path, shown: str) -> str:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory", hint="use list_dir or glob to see its files")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(
            f"{shown} does not exist", hint="check the path with list_dir or glob"
        ) from None
    except OSError as err:
        raise ToolError(f"cannot read {shown}: {err.strerror}") from None
    if b"\0" in data[:BINARY_PROBE]:
        raise ToolError(f"{shown} is a binary file", hint="read_file only shows text files")
    return data.decode("utf-8", "replace")


def _window(text: str, offset: int, limit: int | None) -> tuple[str, int, int, int]:
    """The lines from ``offset`` (1-based), at most ``limit`` lines and MAX_READ_BYTES."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    start = offset - 1
    end = total if limit is None else min(total, start + limit)
    out: list[str] = []
    size = 0
    for line in lines[start:end]:
        size += len(line.encode("utf-8"))
        if size > MAX_READ_BYTES and out:
            break
        out.append(line)
    return "".join(out), start + 1, start + len(out), total


@tool(read_only=True, kind=ToolKind.READ)
async def read_file(
    ctx: ToolContext,
    path: Annotated[str, "File to read, relative to the working directory"],
    offset: Annotated[int, "First line to show, 1-based (default 1)"] = 1,
    limit: Annotated[int | None, "Most lines to show (default: as many as fit)"] = None,
) -> str:
    """Read a text file. Shows at most 100 KiB per call, cut at a line boundary; a note at the
    end gives the offset to continue from."""
    if offset < 1:
        raise ToolError(f"offset must be 1 or more, got {offset}", hint="lines are numbered from 1")
    if limit is not None and limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}", hint="omit limit to read on")
    target = ctx.path(path)
    shown = ctx.display(target)
    text = await asyncio.to_thread(_read_text, target, shown)
    body, first, last, total = _window(text, offset, limit)
    if total and offset > total:
        raise ToolError(f"{shown} has only {total} lines", hint=f"use an offset up to {total}")
    if last < total:
        body += (
            f"{'' if body.endswith(chr(10)) else chr(10)}[lines {first}-{last} of {total} "
            f"shown; call read_file with offset={last + 1} to continue]"
        )
    return body


def _write(target: Path, content: str) -> bool:
    existed = target.exists()
    if target.is_dir():
        raise ToolError(f"{target.name} is a directory", hint="give a file path")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, content.encode("utf-8"))
    return existed


@tool(kind=ToolKind.EDIT)
async def write_file(
    ctx: ToolContext,
    path: Annotated[str, "File to create or replace, relative to the working directory"],
    content: Annotated[str, "The complete new content of the file"],
) -> str:
    """Create a file, or replace its whole content. Parent directories are created."""
    target = ctx.path(path, write=True)
    existed = await asyncio.to_thread(_write, target, content)
    size = len(content.encode("utf-8"))
    return f"wrote {size} bytes to {ctx.display(target)} ({'replaced' if existed else 'created'})"


def _edit(target: Path, shown: str, old: str, new: str, replace_all: bool) -> int:
    text = _read_text(target, shown)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}",
            hint="read_file the file and copy the exact text, including whitespace",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}",
            hint="add surrounding lines to make it unique, or set replace_all=true",
        )
    atomic_write(target, text.replace(old, new).encode("utf-8"))
    return count


@tool(kind=ToolKind.EDIT)
async def edit_file(
    ctx: ToolContext,
    path: Annotated[str, "File to edit, relative to the working directory"],
    old_string: Annotated[str, "Exact text to replace (must occur once unless replace_all)"],
    new_string: Annotated[str, "Text to put in its place"],
    replace_all: Annotated[bool, "Replace every occurrence instead of exactly one"] = False,
) -> str:
    """Replace an exact piece of text in a file. old_string must match exactly once, unless
    replace_all is set."""
    if not old_string:
        raise ToolError("old_string is empty", hint="use write_file to create or replace a file")
    if old_string == new_string:
        raise ToolError("old_string and new_string are the same", hint="nothing to change")
    target = ctx.path(path, write=True)
    shown = ctx.display(target)
    count = await asyncio.to_thread(_edit, target, shown, old_string, new_string, replace_all)
    return f"replaced {count} occurrence{'s' if count > 1 else ''} in {shown}"
