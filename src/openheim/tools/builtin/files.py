"""File tools: ``read_file``, ``write_file`` and ``edit_file``.

Paths go through the sandbox, and each file is then reached again from a descriptor of the
work dir, one folder at a time (``fs.py``). Reads stream the file, so a huge file costs no more
memory than the window shown; writes are atomic (``openheim.files.atomic.atomic_write_at``) and
keep a
file's mode.

When the session's client (``ToolContext.client``, an ACP editor) advertises it, the text is read
and written through the client instead, so the model sees unsaved buffers and the editor tracks
the change; the sandbox and deny-read checks still run first, and a read shows the same window.
The editor is handed only a path where nothing, or a regular file with one name, stands, checked
on a descriptor just before each request and again after it (``fs.check_for_editor``).
``write_file`` and ``edit_file`` return a ``FileDiff`` of the whole text before and after, unless
either side is over ``MAX_DIFF_BYTES``.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, BinaryIO

from openheim.errors import ToolError
from openheim.events import FileDiff
from openheim.tools.base import ToolContext, ToolKind, ToolOutput
from openheim.tools.builtin.fs import (
    BINARY_PROBE,
    check_after_editor,
    check_for_editor,
    kind_at,
    looks_binary,
    open_regular,
    open_regular_at,
    read_error,
    write_bytes_at,
    write_error,
)
from openheim.tools.client_io import ClientIO
from openheim.tools.decorator import tool
from openheim.tools.sandbox import PathSandbox

MAX_READ_BYTES = 100 * 1024
MAX_DIFF_BYTES = 2 * 1024 * 1024
"""An edit gets no diff when the old file on disk is larger than this many bytes, or the text
before or after is longer than this many characters: a ``ToolResult`` event carries both sides
whole, and no surface shows megabytes of diff usefully. (None as the old text would claim a new
file, so the whole diff is left out instead.)"""
_COUNT_CHUNK = 1 << 20
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _binary_error(shown: str) -> ToolError:
    return ToolError(
        f"{shown} is a binary file (it contains NUL bytes)",
        hint="read_file shows text only; use search or a shell command to inspect it",
    )


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each line with its newline, cut to MAX_READ_BYTES (then flagged) so memory stays bounded."""
    while line := fh.readline(MAX_READ_BYTES + 1):
        if len(line) > MAX_READ_BYTES and not line.endswith(b"\n"):
            while (rest := fh.readline(MAX_READ_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield line[:MAX_READ_BYTES], True
        else:
            yield line, False


def _count_rest(fh: BinaryIO) -> int:
    """How many lines remain in ``fh`` (a last line without a newline counts)."""
    count, last = 0, b"\n"
    while chunk := fh.read(_COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _window(fh: BinaryIO, shown: str, offset: int, limit: int | None) -> str:
    """Lines from ``offset`` on, at most ``limit`` of them and MAX_READ_BYTES, plus a note."""
    lines = _lines(fh)
    skipped = sum(1 for _ in itertools.islice(lines, offset - 1))
    kept: list[bytes] = []
    size, more, cut = 0, 0, False
    for line, truncated in lines:
        if len(kept) == limit or (kept and size + len(line) > MAX_READ_BYTES):
            more = 1
            break
        kept.append(line)
        size += len(line)
        cut = cut or truncated
    if not kept:
        if skipped == 0:
            return f"[{shown} is empty]"
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {skipped} lines",
            hint=f"use an offset from 1 to {skipped}",
        )
    last = offset + len(kept) - 1
    total = last + more + (_count_rest(fh) if more else 0)
    body = b"".join(kept).decode("utf-8", "replace")
    notes = []
    if cut:
        notes.append(f"[line {last} is longer than 100 KiB; only its start is shown]")
    if last < total:
        notes.append(
            f"[lines {offset}-{last} of {total} shown; "
            f"call read_file with offset={last + 1} to continue]"
        )
    if notes and not body.endswith("\n"):
        body += "\n"
    return body + "\n".join(notes)


def _read_window(
    sandbox: PathSandbox, path: Path, shown: str, offset: int, limit: int | None
) -> str:
    try:
        with open_regular(sandbox, path) as fh:
            if looks_binary(fh.read(BINARY_PROBE)):
                raise _binary_error(shown)
            fh.seek(0)
            return _window(fh, shown, offset, limit)
    except OSError as err:
        raise read_error(err, shown) from None


def _readable(text: str) -> str:
    """``text`` with each lone surrogate (an undecodable byte kept by ``read_for_edit``, or one a
    client sent) as U+FFFD, so it encodes as UTF-8 and shows like invalid UTF-8 in read_file."""
    return _SURROGATE.sub("\ufffd", text)


def _window_text(text: str, shown: str, offset: int, limit: int | None) -> str:
    """The window of a text the client gave, under the same rules as a file on disk."""
    return _window(io.BytesIO(_readable(text).encode("utf-8")), shown, offset, limit)


@tool(read_only=True, kind=ToolKind.READ)
async def read_file(
    ctx: ToolContext,
    path: Annotated[str, "File to read, relative to the working directory"],
    offset: Annotated[int, "First line to show, 1-based (default 1)"] = 1,
    limit: Annotated[int | None, "Most lines to show (default: as many as fit in 100 KiB)"] = None,
) -> str:
    """Read a text file and return its raw text (no line numbers). One call shows at most 100 KiB,
    cut at a line boundary; when more remains, a final note such as '[lines 1-2345 of 9000 shown;
    call read_file with offset=2346 to continue]' says where to go on. Use offset and limit to
    read a range of lines. Binary files are refused; invalid UTF-8 is shown as U+FFFD."""
    if offset < 1:
        raise ToolError(f"offset must be 1 or more, got {offset}", hint="lines are numbered from 1")
    if limit is not None and limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}", hint="omit limit to read on")
    target = ctx.path(path)
    shown = ctx.display(target)
    if ctx.client is not None and ctx.client.reads_files:
        text = await _editor_read(ctx, ctx.client, target, shown)
        return await asyncio.to_thread(_window_text, text, shown, offset, limit)
    return await asyncio.to_thread(_read_window, ctx.sandbox, target, shown, offset, limit)


async def _editor_read(ctx: ToolContext, client: ClientIO, target: Path, shown: str) -> str:
    """The editor's text of ``target``, handed over only when a plain file (or nothing) stood
    there just before the request and still does after it (``check_for_editor``)."""
    await asyncio.to_thread(check_for_editor, ctx.sandbox, target, shown)
    text = await client.read_text_file(target)
    await asyncio.to_thread(check_after_editor, ctx.sandbox, target, shown, wrote=False)
    return text


async def _editor_write(
    ctx: ToolContext, client: ClientIO, target: Path, shown: str, text: str
) -> None:
    """Have the editor write ``text`` to ``target``, checked just before the request (after
    the checkpoint, which takes time) and again after it (``check_for_editor``)."""
    await asyncio.to_thread(check_for_editor, ctx.sandbox, target, shown)
    await client.write_text_file(target, text)
    await asyncio.to_thread(check_after_editor, ctx.sandbox, target, shown, wrote=True)


def write_bytes(sandbox: PathSandbox, target: Path, shown: str, data: bytes) -> bool:
    """Write ``data`` to ``target``, creating its folders; whether a file was replaced."""
    try:
        return write_bytes_at(sandbox, target, data, create=True)
    except IsADirectoryError:
        raise _directory_error(shown) from None
    except OSError as err:
        raise write_error(err, shown) from None


def _directory_error(shown: str) -> ToolError:
    return ToolError(f"{shown} is a directory", hint="give the path of a file")


def _prior_text(sandbox: PathSandbox, target: Path, shown: str) -> tuple[bool, str | None]:
    """Whether a file stands at ``target`` and, for the diff, its text (undecodable bytes as
    U+FFFD); the text is None when there is no file, or it is unreadable or over MAX_DIFF_BYTES."""
    kind = None
    try:
        with sandbox.parent(target) as (folder, name):
            kind = kind_at(folder, name)
            if kind == "dir":
                raise _directory_error(shown)
            with open_regular_at(folder, name) as fh:
                data = fh.read(MAX_DIFF_BYTES + 1)
    except OSError:  # none there, a FIFO, no read permission...: the write may still work
        return kind is not None, None
    if len(data) > MAX_DIFF_BYTES:
        return True, None
    return True, data.decode("utf-8", "replace")


def _diff(target: Path, old: str | None, new: str) -> FileDiff | None:
    """The diff of an edit of ``target``; None when a side is over MAX_DIFF_BYTES characters."""
    if max(len(old or ""), len(new)) > MAX_DIFF_BYTES:
        return None
    return FileDiff(str(target), None if old is None else _readable(old), _readable(new))


@tool(kind=ToolKind.EDIT)
async def write_file(
    ctx: ToolContext,
    path: Annotated[str, "File to create or overwrite, relative to the working directory"],
    content: Annotated[str, "The complete new content of the file"],
) -> ToolOutput:
    """Create a file or replace its whole content; missing parent folders are created. The write
    is atomic. To change part of an existing file, prefer edit_file."""
    target = ctx.path(path, write=True)
    shown = ctx.display(target)
    data = content.encode("utf-8")
    existed, old = await asyncio.to_thread(_prior_text, ctx.sandbox, target, shown)
    client = ctx.client if ctx.client is not None and ctx.client.writes_files else None
    if client is not None:  # refused before a checkpoint is taken, and again before the write
        await asyncio.to_thread(check_for_editor, ctx.sandbox, target, shown)
    await ctx.before_write(target)
    if client is not None:
        await _editor_write(ctx, client, target, shown, content)
    else:
        await asyncio.to_thread(write_bytes, ctx.sandbox, target, shown, data)
    await ctx.written(target)
    message = f"wrote {len(data)} bytes to {shown} ({'replaced' if existed else 'created'})"
    # an existing file without an old text was not read (too big, unreadable): no diff
    diff = None if existed and old is None else _diff(target, old, content)
    return ToolOutput(message, diff=diff)


def read_for_edit(sandbox: PathSandbox, target: Path, shown: str) -> str:
    """The file's text; undecodable bytes survive the round trip as surrogate escapes."""
    try:
        with open_regular(sandbox, target) as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist", hint="use write_file to create it") from None
    except OSError as err:
        raise read_error(err, shown) from None
    if looks_binary(data):
        raise _binary_error(shown)
    return data.decode("utf-8", "surrogateescape")


def _crlf_fallback(text: str, old: str, new: str) -> tuple[str, str]:
    """Match a file with CRLF line ends when the model wrote plain newlines."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def apply_edit(text: str, shown: str, old: str, new: str, replace_all: bool) -> tuple[str, int]:
    """``text`` with ``old`` replaced by ``new`` and the number of replacements, under
    edit_file's rules: an exact match, unique unless ``replace_all``, CRLF-tolerant."""
    old, new = _crlf_fallback(text, old, new)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}",
            hint="call read_file to see the current text and copy it exactly, "
            "including whitespace and indentation",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}",
            hint="include more surrounding lines so it matches exactly once, "
            "or set replace_all=true to change every occurrence",
        )
    return text.replace(old, new), count


def _write_text(sandbox: PathSandbox, target: Path, shown: str, text: str) -> None:
    """Write an edited text atomically; surrogate escapes go back to the bytes they stood for."""
    try:
        write_bytes_at(sandbox, target, text.encode("utf-8", "surrogateescape"), create=False)
    except OSError as err:
        raise write_error(err, shown) from None


@tool(kind=ToolKind.EDIT)
async def edit_file(
    ctx: ToolContext,
    path: Annotated[str, "File to edit, relative to the working directory"],
    old_string: Annotated[str, "Exact text to replace; must occur once unless replace_all"],
    new_string: Annotated[str, "Text to put in its place (must differ from old_string)"],
    replace_all: Annotated[bool, "Replace every occurrence instead of exactly one"] = False,
) -> ToolOutput:
    """Replace an exact piece of text in a file. old_string must match the file's current text
    character for character (whitespace included) and occur exactly once, unless replace_all is
    true; otherwise the call fails and nothing changes. Read the file first to copy the text."""
    if not old_string:
        raise ToolError("old_string is empty", hint="use write_file to create or replace a file")
    if old_string == new_string:
        raise ToolError(
            "old_string and new_string are identical", hint="put the changed text in new_string"
        )
    target = ctx.path(path, write=True)
    shown = ctx.display(target)
    client = ctx.client
    if client is not None and client.reads_files:
        text = await _editor_read(ctx, client, target, shown)
    else:
        text = await asyncio.to_thread(read_for_edit, ctx.sandbox, target, shown)
    updated, count = await asyncio.to_thread(
        apply_edit, text, shown, old_string, new_string, replace_all
    )
    await ctx.before_write(target)
    if client is not None and client.writes_files:
        await _editor_write(ctx, client, target, shown, updated)
    else:
        await asyncio.to_thread(_write_text, ctx.sandbox, target, shown, updated)
    await ctx.written(target)
    message = f"replaced {count} occurrence{'s' if count > 1 else ''} in {shown}"
    return ToolOutput(message, diff=_diff(target, text, updated))
