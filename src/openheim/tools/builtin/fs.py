"""Filesystem helpers shared by the built-in tools.

Every helper reaches its path from a descriptor of the work dir, one component at a time
(``PathSandbox.parent`` / ``folder``), and opens, stats, lists or renames relative to the
descriptor of the folder it ends in, so a folder swapped for a symlink after the sandbox check
cannot send it elsewhere.

* ``open_regular`` opens a file for reading without following a symlink swapped in after the
  sandbox check and without blocking on a FIFO, and refuses a file with more than one name
  (``HardLinkError``): a hard link can give a secret file elsewhere an innocent name that
  ``deny_read`` cannot see through, and its other names cannot be found cheaply. The link
  count is read from the opened descriptor, so the file checked is the file read.
  ``kind_of`` says what stands at a path; ``check_for_editor`` and ``check_after_editor``
  allow an editor, which opens a path by name itself, only such a file or nothing.
* ``write_bytes_at`` writes a file atomically, making its missing folders.
* ``walk`` lists a tree in sorted path order without following symlinks and skipping ``.git``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from openheim.errors import SandboxError, ToolError
from openheim.files.atomic import atomic_write_at
from openheim.tools.pathwalk import LIST_FLAGS
from openheim.tools.sandbox import PathSandbox

BINARY_PROBE = 8192
SKIP_NAMES = frozenset({".git"})

EntryKind = Literal["file", "dir", "link", "other"]


def looks_binary(head: bytes) -> bool:
    """A file is treated as binary when its first 8 KiB contain a NUL byte."""
    return b"\0" in head[:BINARY_PROBE]


class HardLinkError(OSError):
    """A regular file with more than one name (``st_nlink > 1``): the file tools do not read it."""

    def __init__(self, name: str, links: int) -> None:
        super().__init__(errno.EMLINK, f"a hard link ({links} names)", name)
        self.links = links


def open_regular(sandbox: PathSandbox, path: Path) -> BinaryIO:
    """Open the regular file ``path`` (one the sandbox resolved) for reading; a directory, FIFO
    or symlink raises OSError, a file with other names HardLinkError, a symlink on the way
    SandboxError."""
    with sandbox.parent(path) as (folder, name):
        return open_regular_at(folder, name)


def not_plain(err: OSError) -> str | None:
    """What an ``OSError`` of ``open_regular`` says stands at a path instead of a regular file
    with one name, for a message (``is a hard link (2 names)``, ...); None when it says nothing
    of that (no file there, no permission, an I/O error)."""
    if isinstance(err, HardLinkError):
        return f"is a hard link ({err.links} names)"
    if err.errno == errno.ELOOP:
        return "is a symlink, or has one on the way"
    if isinstance(err, IsADirectoryError):
        return "is a folder"
    if err.errno == errno.EINVAL:
        return "is not a regular file"
    return None


def _plain_or_absent(sandbox: PathSandbox, path: Path) -> OSError | None:
    """None when nothing, or a regular file with one name, stands at ``path`` (checked on a
    descriptor opened with ``O_NOFOLLOW``); else the error saying why not."""
    try:
        with open_regular(sandbox, path):
            return None
    except FileNotFoundError:
        return None
    except OSError as err:
        return err


def check_for_editor(sandbox: PathSandbox, path: Path, shown: str) -> None:
    """Refuse unless ``path`` is nothing yet (the editor may hold an unsaved buffer, or create
    the file) or a regular file with one name. An editor opens the path by name itself,
    following links and perhaps writing in place: through a hard link it would read or change
    the file's other names, through a symlink its target."""
    err = _plain_or_absent(sandbox, path)
    if err is None:
        return
    why = not_plain(err)
    if why is None or isinstance(err, HardLinkError):
        raise read_error(err, shown)
    raise ToolError(
        f"refused: {shown} {why}; the editor is only handed a regular file with one name",
        hint="give the path of a plain file",
    )


def check_after_editor(sandbox: PathSandbox, path: Path, shown: str, *, wrote: bool) -> None:
    """``check_for_editor`` again once the editor answered: a hard link or a symlink swapped in
    while the editor opened the path by name (beyond openheim's reach) is reported, and the
    text it read is never shown."""
    try:
        err = _plain_or_absent(sandbox, path)
    except SandboxError as stopped:  # a folder on the way became a symlink
        err = OSError(errno.ELOOP, stopped.message)
    if err is None:
        return
    why = not_plain(err) or f"cannot be checked ({err.strerror or err})"
    if wrote:
        raise ToolError(
            f"{shown} {why} after the editor wrote it: another process swapped it meanwhile, "
            "and the editor may have written through it to another file",
            hint="ask the user to check where it leads (its other names: find / -samefile "
            "FILE) and to give it a copy of its own before it is written again",
        )
    raise ToolError(
        f"{shown} {why} after the editor read it: another process swapped it meanwhile, so "
        "its text is not shown",
        hint="work without it, or ask the user to replace it with a copy of its own",
    )


def open_regular_at(dir_fd: int, name: str) -> io.BufferedReader:
    """Open the regular file ``name`` in the folder ``dir_fd`` for reading, as ``open_regular``."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
        if info.st_nlink > 1:
            raise HardLinkError(name, info.st_nlink)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def kind_at(dir_fd: int, name: str) -> EntryKind | None:
    """What stands at ``name`` in ``dir_fd`` (a symlink is not followed); None when nothing."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def kind_of(sandbox: PathSandbox, path: Path) -> EntryKind | None:
    """What stands at ``path`` (one the sandbox resolved); None when nothing or a parent is not
    a folder. Other OSErrors propagate."""
    try:
        with sandbox.parent(path) as (folder, name):
            return kind_at(folder, name)
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_bytes_at(sandbox: PathSandbox, path: Path, data: bytes, *, create: bool) -> bool:
    """Write ``data`` to ``path`` (one the sandbox resolved) atomically, making its missing
    folders when ``create``; whether a file was replaced. A directory at ``path`` raises
    IsADirectoryError."""
    with sandbox.parent(path, create=create) as (folder, name):
        kind = kind_at(folder, name)
        if kind == "dir":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        atomic_write_at(folder, name, data)
    return kind is not None


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
    if isinstance(err, HardLinkError):
        return ToolError(
            f"refused: {shown} is a hard link (one file with {err.links} names); file tools do "
            "not read or edit such files, since a hard link can give a secret an innocent name",
            hint="work without it, or ask the user to replace it with a copy of its own",
        )
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
    """One walked entry: its path parts relative to the walk's top, its path and its kind.

    ``folder`` is a descriptor of the folder holding it, open while the walk is at this entry
    (until the next one is asked for): open the entry relative to it (``open_regular_at``).
    """

    rel: tuple[str, ...]
    path: Path
    kind: EntryKind
    folder: int

    @property
    def name(self) -> str:
        return self.rel[-1]


def walk(
    sandbox: PathSandbox,
    top: Path,
    *,
    descend: Callable[[Entry], bool] | None = None,
    stop: threading.Event | None = None,
) -> Iterator[Entry]:
    """Every entry below ``top`` (a folder the sandbox resolved), pre-order, in sorted path order.

    Symlinks are yielded as ``link`` entries and never followed, and each folder is opened
    relative to its parent's descriptor with ``O_NOFOLLOW``, so a walk cannot leave the work
    dir even if a folder is swapped for a symlink meanwhile; ``.git`` is skipped; folders that
    cannot be read are skipped, ``top`` included. ``descend`` decides whether a folder's
    contents are listed; ``stop`` ends the walk early.
    """
    with contextlib.ExitStack() as opened:
        try:
            top_fd = opened.enter_context(sandbox.folder(top))
        except OSError:
            return
        stack = [(top_fd, iter(_scan(top_fd, top, ())))]
        try:
            while stack:
                entry = next(stack[-1][1], None)
                if entry is None:
                    _close_level(stack, top_fd)
                    continue
                if stop is not None and stop.is_set():
                    return
                yield entry
                if entry.kind == "dir" and (descend is None or descend(entry)):
                    sub = _open_folder(entry)
                    if sub is not None:
                        stack.append((sub, iter(_scan(sub, entry.path, entry.rel))))
        finally:
            while stack:
                _close_level(stack, top_fd)


def _close_level(stack: list[tuple[int, Iterator[Entry]]], top_fd: int) -> None:
    fd, _ = stack.pop()
    if fd != top_fd:
        os.close(fd)


def _open_folder(entry: Entry) -> int | None:
    """A listable descriptor of the folder ``entry``; None when it cannot be opened, or is no
    longer a folder (a symlink swapped in is not followed)."""
    try:
        return os.open(entry.name, LIST_FLAGS, dir_fd=entry.folder)
    except OSError:
        return None


def _scan(fd: int, folder: Path, rel: tuple[str, ...]) -> list[Entry]:
    try:
        with os.scandir(fd) as it:
            entries = [
                Entry((*rel, e.name), folder / e.name, _kind(e), fd)
                for e in it
                if e.name not in SKIP_NAMES
            ]
    except OSError:
        return []
    # a folder sorts as "name/" so that pre-order equals the sorted order of full paths
    entries.sort(key=lambda e: e.name + "/" if e.kind == "dir" else e.name)
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
