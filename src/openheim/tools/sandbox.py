"""Path sandbox: every path a tool touches is confined to the work dir.

Rules, in order:

1. A relative path resolves against the session cwd, which itself lies inside the work dir.
2. ``..`` is normalised lexically before the filesystem is asked anything, so a path that names a
   place outside (``../x``, ``/etc/passwd``, ``missing/../../x``, ``/proc/self/root/...``) is
   refused whether or not its components exist.
3. The remaining components are walked from the work dir down; every symlink met is resolved and
   refused when its target lies outside the work dir or does not exist (dangling).

The path handed back contains no symlinks, so the caller operates on exactly what was checked.
Writers should still create files with ``O_NOFOLLOW`` / rename into place (see ``fs.py``) so a
symlink swapped in afterwards is not followed.
"""

from __future__ import annotations

import os
from pathlib import Path

from openheim.errors import SandboxError, UnusablePath


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

    def _relative(self, path: Path) -> Path | None:
        for root in self._roots:
            if path == root:
                return Path()
            if path.is_relative_to(root):
                return path.relative_to(root)
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
        lexical = Path(os.path.normpath(cwd / raw))
        rel = self._relative(lexical)
        if rel is None:
            raise SandboxError(
                f"path {raw!r} is outside the work dir {self.root}",
                hint="use a path inside the work dir",
            )
        try:
            resolved = self._walk(self.root, rel.parts, raw)
        except OSError as err:  # e.g. a name too long for the filesystem
            raise UnusablePath(raw, err.strerror or str(err)) from None
        if write and resolved == self.root:
            raise SandboxError("cannot write to the work dir itself", hint="name a file inside it")
        return resolved

    def _walk(self, current: Path, parts: tuple[str, ...], raw: str) -> Path:
        for i, part in enumerate(parts):
            candidate = current / part
            try:
                is_link = candidate.is_symlink()
            except OSError:
                is_link = False
            if not is_link:
                if not candidate.exists():  # nothing below a missing component can be a link
                    return candidate.joinpath(*parts[i + 1 :])
                current = candidate
                continue
            target = Path(os.path.realpath(candidate))
            if not target.exists():
                raise SandboxError(
                    f"path {raw!r} goes through a dangling symlink ({self.display(candidate)})",
                    hint="remove the broken link or use another path",
                )
            if self._relative(target) is None:
                raise SandboxError(
                    f"path {raw!r} follows a symlink out of the work dir (to {target})",
                    hint="only paths inside the work dir can be used",
                )
            current = target
        return current

    def display(self, path: Path) -> str:
        """``path`` relative to the work dir (POSIX separators), or absolute if outside."""
        rel = self._relative(path)
        if rel is None:
            return str(path)
        return rel.as_posix() if rel.parts else "."
