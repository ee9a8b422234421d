"""Filesystem helpers shared by the built-in tools.

* ``open_regular`` opens a file for reading without following a symlink swapped in after the
  sandbox check and without blocking on a FIFO.
* ``walk`` lists a tree in sorted path order without following symlinks and skipping ``.git``.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from openheim.errors import ToolError

BINARY_PROBE = 8192
SKIP_NAMES = frozenset({".git"})

EntryKind = Literal["file", "dir", "link", "other"]


def looks_binary(head: bytes) -> bool:
    """A file is treated as binary when its first 8 KiB contain a NUL byte."""
    return b"\0" in head[:BINARY_PROBE]


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading; directories, FIFOs and symlinks raise OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_error(err: OSError, shown: str) -> ToolError:
    """A ToolError the model can act on for an OSError met while reading ``shown``."""
    if isinstance(err, FileNotFoundError):
        return ToolError(f"{shown} does not exist", hint="check the path with list_dir or glob")
    if isinstance(err, IsADirectoryError):
        return ToolError(f"{shown} is a directory", hint="use list_dir to see what it contains")
    if isinstance(err, NotADirectoryError):
        return ToolError(f"a parent of {shown} is a file, not a directory", hint="fix the path")
    if isinstance(err, PermissionError):
        return ToolError(f"permission denied reading {shown}", hint="pick a file you can read")
    if err.errno == errno.ELOOP:
        return ToolError(f"{shown} became a symlink while being read", hint="try again")
    return ToolError(f"cannot read {shown}: {err.strerror or err}", hint="check the path")


def write_error(err: OSError, shown: str) -> ToolError:
    """A ToolError the model can act on for an OSError met while writing ``shown``."""
    if isinstance(err, FileExistsError | NotADirectoryError):
        return ToolError(
            f"cannot create {shown}: a file stands where a folder of its path should be",
            hint="pick a path whose folders are not files",
        )
    if isinstance(err, PermissionError):
        return ToolError(f"permission denied writing {shown}", hint="pick a writable location")
    return ToolError(f"cannot write {shown}: {err.strerror or err}", hint="check the path")


@dataclass(frozen=True, slots=True)
class Entry:
    """One walked entry: its path parts relative to the walk's top, its path and its kind."""

    rel: tuple[str, ...]
    path: Path
    kind: EntryKind


def walk(
    top: Path,
    *,
    descend: Callable[[Entry], bool] | None = None,
    stop: threading.Event | None = None,
) -> Iterator[Entry]:
    """Every entry below ``top``, pre-order, in sorted path order.

    Symlinks are yielded as ``link`` entries and never followed, so a walk cannot leave the
    work dir; ``.git`` is skipped; folders that cannot be read are skipped. ``descend`` decides
    whether a folder's contents are listed; ``stop`` ends the walk early.
    """
    stack = [iter(_scan(top, ()))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if stop is not None and stop.is_set():
            return
        yield entry
        if entry.kind == "dir" and (descend is None or descend(entry)):
            stack.append(iter(_scan(entry.path, entry.rel)))


def _scan(folder: Path, rel: tuple[str, ...]) -> list[Entry]:
    try:
        with os.scandir(folder) as it:
            items = [e for e in it if e.name not in SKIP_NAMES]
    except OSError:
        return []
    entries = [Entry((*rel, e.name), Path(e.path), _kind(e)) for e in items]
    # a folder sorts as "name/" so that pre-order equals the sorted order of full paths
    entries.sort(key=lambda e: e.rel[-1] + "/" if e.kind == "dir" else e.rel[-1])
    return entries


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if entry.is_file(follow_symlinks=False) else "other"
    except OSError:
        return "other"
