"""Path sandbox: every path a tool touches is confined to the work dir.

Rules, in order:

1. A relative path resolves against the session cwd, which itself lies inside the work dir.
2. ``..`` is normalised lexically before the filesystem is asked anything, so a path that names a
   place outside (``../x``, ``/etc/passwd``, ``missing/../../x``, ``/proc/self/root/...``) is
   refused whether or not its components exist.
3. The remaining components are walked from a descriptor of the work dir down, one at a time,
   never letting the kernel follow a symlink (``pathwalk``): every symlink met is read and
   expanded there, and refused when its target leads out of the work dir or does not exist
   (dangling).

``resolve`` hands back a path without symlinks. The file tools then reach it again component by
component through ``parent`` or ``folder``, which refuse any symlink on the way: a folder
swapped for a symlink after the check (to outside, or to another place inside) stops the call
instead of redirecting it. The last component is the caller's to open with ``O_NOFOLLOW`` or
to replace by ``rename``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openheim.errors import SandboxError, UnusablePath
from openheim.tools.pathwalk import LIST_FLAGS, PathWalk, stopped


class PathSandbox:
    def __init__(self, work_dir: str | os.PathLike[str]) -> None:
        given = Path(os.path.abspath(work_dir))
        real = Path(os.path.realpath(given))
        if not real.is_dir():
            raise SandboxError(
                f"work dir {given} is not a directory",
                hint="pass an existing directory as work_dir",
            )
        self.root = real
        self._roots = (real,) if given == real else (real, given)
        self._prefixes = tuple((str(r), str(r).rstrip("/") + "/") for r in self._roots)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The work dir's real path, and the path it was given as when that differs: all a
        sandbox decides by (two with equal roots decide every path alike)."""
        return self._roots

    def _relative(self, path: str | os.PathLike[str]) -> tuple[str, ...] | None:
        """The components of ``path`` (absolute, normalised) below the work dir; None when it
        lies outside. (Plain string work: this runs several times per tool call.)"""
        text = os.fspath(path)
        for root, prefix in self._prefixes:
            if text == root:
                return ()
            if text.startswith(prefix):
                return tuple(text[len(prefix) :].split("/"))
        return None

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (absolute, already normalised) lies inside the work dir."""
        return self._relative(Path(path)) is not None

    def check_cwd(self, cwd: str | os.PathLike[str]) -> Path:
        """A session cwd must be an existing directory inside the work dir."""
        path = self.resolve(str(cwd), self.root)
        if not path.is_dir():
            raise SandboxError(f"cwd {cwd} is not a directory", hint="pick an existing directory")
        return path

    def resolve(self, raw: str, cwd: Path, *, write: bool = False) -> Path:
        """The real path for ``raw``, or SandboxError saying why it is refused."""
        if not raw or "\x00" in raw:
            raise SandboxError("empty path or a path with a NUL byte", hint="give a file path")
        rel = self._relative(os.path.normpath(cwd / raw))
        if rel is None:
            raise SandboxError(
                f"path {raw!r} is outside the work dir {self.root}",
                hint="use a path inside the work dir",
            )
        try:
            with PathWalk(self._roots, raw, follow=True) as walk:
                rest = walk.descend(rel, last="look")
                resolved = walk.path.joinpath(*rest)
        except OSError as err:  # e.g. a name too long for the filesystem
            raise UnusablePath(raw, err.strerror or str(err)) from None
        if write and resolved == self.root:
            raise SandboxError("cannot write to the work dir itself", hint="name a file inside it")
        return resolved

    def _inside(self, path: Path) -> tuple[tuple[str, ...], str]:
        """The components of ``path`` below the work dir and its display; SandboxError if
        outside."""
        rel = self._relative(path)
        if rel is None:
            raise SandboxError(
                f"path {path} is outside the work dir {self.root}",
                hint="use a path inside the work dir",
            )
        return rel, "/".join(rel) or "."

    @contextmanager
    def parent(self, path: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """A descriptor of the folder holding ``path`` and the last name of ``path``.

        ``path`` is one ``resolve`` handed back; the folder is reached from the work dir one
        component at a time and any symlink on the way is refused (SandboxError). Missing
        folders raise FileNotFoundError, or are made when ``create``; a file where a folder
        should be raises NotADirectoryError. For the work dir itself the name is ``"."``. The
        descriptor (possibly ``O_PATH``) serves as ``dir_fd``; it is closed on exit.
        """
        parts, shown = self._inside(path)
        with PathWalk(self._roots, shown, follow=False) as walk:
            rest = walk.descend(parts, last="keep", create=create) or (".",)
            if len(rest) > 1:
                raise stopped(walk.fd, rest[0])
            yield walk.fd, rest[0]

    @contextmanager
    def folder(self, path: Path) -> Iterator[int]:
        """A descriptor of the folder ``path`` that can be listed (``os.scandir``), reached as
        by ``parent``; FileNotFoundError or NotADirectoryError when it is not a folder."""
        parts, shown = self._inside(path)
        with PathWalk(self._roots, shown, follow=False) as walk:
            rest = walk.descend(parts)
            if rest:
                raise stopped(walk.fd, rest[0])
            fd = os.open(".", LIST_FLAGS, dir_fd=walk.fd)
        try:
            yield fd
        finally:
            os.close(fd)

    def display(self, path: Path) -> str:
        """``path`` relative to the work dir (POSIX separators), or absolute if outside."""
        rel = self._relative(path)
        if rel is None:
            return str(path)
        return "/".join(rel) or "."
