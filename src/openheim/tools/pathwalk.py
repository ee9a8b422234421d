"""Walking a path down from a descriptor of the work dir, one component at a time.

Every folder on the way is opened relative to its parent's descriptor with ``O_NOFOLLOW |
O_DIRECTORY`` (plus ``O_PATH`` where the platform has it, so, as in an ordinary path lookup,
only search permission is needed), so the kernel never follows a symlink. What a walk does with
a symlink it meets depends on ``follow``:

* ``follow=True`` (resolving a path the model gave): the link is read with ``readlink`` and its
  target's components are walked in its place, ``..`` stepping back to the parent descriptor
  already held. At most ``MAX_HOPS`` links are expanded per walk (a loop reads as dangling); an
  absolute target must lie under a work dir root, and a ``..`` may not climb above the root,
  even on the way back in.
* ``follow=False`` (using a path the sandbox already resolved, which had no symlinks): any
  symlink means the tree changed since the check, and the walk is refused.

Either way, a folder swapped for a symlink to elsewhere between a check and the use cannot
redirect a read or a write out of the work dir.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from openheim.errors import SandboxError

Last = Literal["enter", "look", "keep"]
"""What ``PathWalk.descend`` does with the final name."""
MAX_HOPS = 40
"""Symlinks one walk expands at most, as the kernel's own limit."""
DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""Opens a folder so that it can be listed (``os.scandir``) or synced."""


@dataclass(frozen=True, slots=True)
class _Step:
    """A component still to walk. One that came from a symlink's target carries the first link
    of the chain (named when it dangles) and where the last one points (named when it leads out).
    """

    name: str
    link: Path | None = None
    dest: str | None = None


def link_target(name: str, dir_fd: int) -> str | None:
    """The target of the symlink ``name`` in ``dir_fd``, or None when it is not a symlink."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def stopped(dir_fd: int, name: str) -> OSError:
    """The error for a walk that stopped at ``name`` in ``dir_fd``: missing, or not a folder."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)


class PathWalk:
    """Descriptors of the folders from a root down to ``parts``; a context manager closing them.

    ``roots`` are the work dir's real path first, then any other name it was given by; ``raw``
    is the path as the caller named it, for messages.
    """

    def __init__(self, roots: tuple[Path, ...], raw: str, *, follow: bool) -> None:
        self.root = roots[0]
        self.parts: list[str] = []
        self._roots = roots
        self._raw = raw
        self._follow = follow
        self._fds = [os.open(self.root, DIR_FLAGS)]
        self._hops = 0

    @property
    def fd(self) -> int:
        """The descriptor of the folder reached so far."""
        return self._fds[-1]

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    def __enter__(self) -> PathWalk:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        while self._fds:
            os.close(self._fds.pop())

    def descend(
        self, names: tuple[str, ...], *, last: Last = "enter", create: bool = False
    ) -> tuple[str, ...]:
        """Walk down ``names`` as folders; the names left unwalked, empty when all were walked.

        The walk stops at the first name that is missing or not a folder and hands back it and
        the rest. The final name is entered like the others with ``last="enter"``; with
        ``"look"`` it is only expanded when it is a symlink, and with ``"keep"`` never touched:
        either way it comes back unwalked. With ``create``, missing folders are made (with
        ``mkdir`` relative to the parent's descriptor). Raises SandboxError for a symlink the
        walk may not follow.
        """
        pending = deque(_Step(name) for name in names)
        while pending:
            step = pending.popleft()
            if step.name in ("", "."):
                continue
            if step.name == "..":
                self._up(step)
                continue
            if not pending and last != "enter":
                if last == "keep" or not self._expand_last(step, pending):
                    return (step.name,)
                continue
            if not self._enter(step, pending, create):
                return (step.name, *(s.name for s in pending))
        return ()

    def _enter(self, step: _Step, pending: deque[_Step], create: bool) -> bool:
        """Step into ``step`` or expand it as a link; False when it is missing or not a folder."""
        try:
            fd = os.open(step.name, DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            if step.link is not None:
                raise self._dangling(step.link) from None
            if not create:
                return False
            fd = self._make(step.name)
        except OSError as err:
            if err.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            target = link_target(step.name, self.fd)
            if target is None:  # a file (or FIFO, socket...) where a folder could be
                if step.link is not None and pending and pending[0].link is not None:
                    raise self._dangling(step.link) from None
                return False
            self._expand(step, target, pending)
            return True
        self._fds.append(fd)
        self.parts.append(step.name)
        return True

    def _expand_last(self, step: _Step, pending: deque[_Step]) -> bool:
        """Expand the final name if it is a symlink (one ``lstat``, as it needs no descriptor)."""
        try:
            mode = os.stat(step.name, dir_fd=self.fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            if step.link is not None:
                raise self._dangling(step.link) from None
            return False
        if not stat.S_ISLNK(mode):
            return False
        self._expand(step, os.readlink(step.name, dir_fd=self.fd), pending)
        return True

    def _make(self, name: str) -> int:
        with contextlib.suppress(FileExistsError):  # made meanwhile: the open checks what it is
            os.mkdir(name, 0o777, dir_fd=self.fd)
        return os.open(name, DIR_FLAGS, dir_fd=self.fd)

    def _expand(self, step: _Step, target: str, pending: deque[_Step]) -> None:
        """Put the components of the link ``step`` (whose target is ``target``) in its place."""
        link = self.path / step.name
        dest = os.path.normpath(self.path / target)
        if not self._follow:
            raise SandboxError(
                f"path {self._raw!r} changed while in use: {self._show(link)} is now a symlink",
                hint="try again",
            )
        self._hops += 1
        if self._hops > MAX_HOPS:
            raise self._dangling(step.link or link)
        names = [n for n in target.split("/") if n not in ("", ".")]
        if target.startswith("/"):
            names = self._below_root(names, dest)
            while len(self._fds) > 1:
                os.close(self._fds.pop())
            self.parts.clear()
        origin = step.link or link
        pending.extendleft(_Step(name, origin, dest) for name in reversed(names))

    def _below_root(self, names: list[str], dest: str) -> list[str]:
        """The names of an absolute link target below the root it starts with."""
        for root in self._roots:
            prefix = list(root.parts[1:])
            if names[: len(prefix)] == prefix:
                return names[len(prefix) :]
        raise self._outside(dest)

    def _up(self, step: _Step) -> None:
        if not self.parts:
            raise self._outside(step.dest or str(self.root.parent))
        os.close(self._fds.pop())
        self.parts.pop()

    def _show(self, path: Path) -> str:
        rel = path.relative_to(self.root)
        return rel.as_posix() if rel.parts else "."

    def _outside(self, dest: str) -> SandboxError:
        return SandboxError(
            f"path {self._raw!r} follows a symlink out of the work dir (to {dest})",
            hint="only paths inside the work dir can be used",
        )

    def _dangling(self, link: Path) -> SandboxError:
        return SandboxError(
            f"path {self._raw!r} goes through a dangling symlink ({self._show(link)})",
            hint="remove the broken link or use another path",
        )
