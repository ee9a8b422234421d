"""Crash-safe file writes: a temp file in the same folder, flushed, then renamed into place.

A reader sees the old file or the new one, never half of it, and a symlink at the destination is
replaced, not followed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing regular file's mode.

    A new file gets the usual ``0o666`` minus the umask. The temp file is opened with
    ``O_EXCL | O_NOFOLLOW`` and renamed over the destination, so a symlink planted at either
    name is replaced, never written through.
    """
    try:
        st = os.lstat(path)
        mode: int | None = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except FileNotFoundError:
        mode = None
    tmp, fd = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _create_temp(path: Path) -> tuple[Path, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = path.with_name(f".{path.name[:64]}.{secrets.token_hex(6)}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue


def _sync_dir(folder: Path) -> None:
    """Make the rename durable; some filesystems cannot fsync a directory, which is fine."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
