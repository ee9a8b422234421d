"""Reading files that may be hostile: no symlink on the way, no hard link, no FIFO, no device.

A folder a project offers (its prompts, its skills) is opened from the project root one part at
a time with ``O_NOFOLLOW``, and each file in it the same way; type, link count and size come
from ``fstat`` of the opened descriptor, so nothing can be swapped between a check and the read.
Only a regular file with one name is read: a symlink or a hard link could make a cloned project
offer another file of the user's (its contents would then reach the model).

``read_regular`` reads one file by path the same way (a file another program owns, a token
file): a FIFO, a device or a folder is refused before a byte is read, and never more than the
limit is read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotReal(OSError):
    """A symlink (or not a folder) where an untrusted folder must be real."""


def open_real_folder(root: Path, parts: tuple[str, ...], hint: str) -> int:
    """A descriptor of the folder ``root/parts...``, each part opened with ``O_NOFOLLOW``
    (``root`` itself is the user's choice and is followed); NotReal names the part that is a
    symlink or not a folder, with ``hint``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = root
    try:
        for part in parts:
            shown = shown / part
            sub = open_real_subfolder(fd, part, f"{shown}", hint)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_real_subfolder(dir_fd: int, name: str, shown: str, hint: str) -> int:
    """A descriptor of the folder ``name`` in ``dir_fd``, not following a symlink."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        what = "a symlink" if stat.S_ISLNK(mode) else "not a folder"
        raise NotReal(f"{shown} is {what}; {hint}") from None


def read_real(dir_fd: int, name: str, max_bytes: int, hint: str) -> str:
    """The UTF-8 text of the regular, singly linked file ``name`` in ``dir_fd``, read without
    following a symlink or blocking on a FIFO; ValueError says why a file is not one."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValueError(f"it is a symlink; {hint}") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"it is not a regular file; {hint}")
        if info.st_nlink > 1:
            raise ValueError(f"it is a hard link ({info.st_nlink} names); {hint}")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"it is larger than {max_bytes // 1024} KiB")
    return data.decode("utf-8")


def read_regular(
    path: Path,
    max_bytes: int,
    *,
    follow_symlinks: bool = True,
    check: Callable[[os.stat_result], None] | None = None,
) -> bytes:
    """The bytes of the regular file at ``path``: opened without blocking on a FIFO, its type
    and size taken from ``fstat`` of the opened descriptor (``check`` sees that too, before any
    byte is read), at most ``max_bytes`` read. ValueError says why a file is refused ("it is a
    FIFO, not a regular file", "it is larger than 4 KiB"); errors of ``open`` pass through
    (FileNotFoundError; ELOOP for a symlink without ``follow_symlinks``)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "special")
            raise ValueError(f"it is {kind}, not a regular file")
        if check is not None:
            check(info)
        if info.st_size > max_bytes:
            raise ValueError(f"it is larger than {size_text(max_bytes)}")
        data = _read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew after the fstat
        raise ValueError(f"it is larger than {size_text(max_bytes)}")
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def size_text(count: int) -> str:
    """``count`` bytes as people write it: "16 MiB", "4 KiB", "100 bytes"."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if count >= unit and count % unit == 0:
            return f"{count // unit} {name}"
    return f"{count} bytes"
