"""Reading an untrusted folder's own files: no symlink on the way, no hard link, no FIFO.

A folder a project offers (its prompts, its skills) is opened from the project root one part at
a time with ``O_NOFOLLOW``, and each file in it the same way; type, link count and size come
from ``fstat`` of the opened descriptor, so nothing can be swapped between a check and the read.
Only a regular file with one name is read: a symlink or a hard link could make a cloned project
offer another file of the user's (its contents would then reach the model).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


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
