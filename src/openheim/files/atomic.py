"""Crash-safe file writes: a temp file in the same folder, flushed, then renamed into place.

A reader sees the old file or the new one, never half of it, and a symlink at the destination is
replaced, not followed. ``atomic_write_at`` does the whole job relative to a descriptor of the
folder, so nothing above that folder is looked up again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing regular file's mode
    (or giving it ``mode``)."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        atomic_write_at(folder, path.name, data, mode)
    finally:
        os.close(folder)


def atomic_write_at(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Replace ``name`` in the folder ``dir_fd`` with ``data`` atomically.

    The file gets ``mode`` when given (set before any byte is written, so private data is never
    readable by others); else an existing regular file's mode is kept, and a new file gets the
    usual ``0o666`` minus the umask. The temp file is opened with ``O_EXCL | O_NOFOLLOW`` and
    renamed over the destination, both relative to ``dir_fd``, so a symlink planted at either
    name is replaced, never written through.
    """
    if mode is None:
        mode = _kept_mode(dir_fd, name)
    tmp, fd = _create_temp(dir_fd, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    _sync_dir(dir_fd)


def _kept_mode(dir_fd: int, name: str) -> int | None:
    """The mode of the regular file ``name`` (None: absent or not a regular file)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _create_temp(dir_fd: int, name: str) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, flags, 0o666, dir_fd=dir_fd)
        except FileExistsError:
            continue


def _sync_dir(dir_fd: int) -> None:
    """Make the rename durable; some filesystems cannot fsync a directory, which is fine.

    The folder is opened again from ``dir_fd`` because that may be an ``O_PATH`` descriptor,
    which cannot be synced.
    """
    with contextlib.suppress(OSError):
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
