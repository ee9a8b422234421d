"""Protected paths: files whose contents run programs or decide what runs.

Writing such a file is as good as running a command: ``core.fsmonitor`` in ``.git/config`` runs
at the next ``git status``, a hook in ``.git/hooks`` at the next commit, ``.envrc`` when a shell
enters the folder, ``.vscode/tasks.json`` when the editor opens it, and ``.openheim/`` decides
what openheim itself may do. So a change to one (``write_file``, ``edit_file``, applying a
staged change, deleting or moving) is always asked about, even in ``auto`` mode, and is refused
where no one can be asked unless an allow rule names that exact path (see ``policy``).

An entry names a file or folder at any depth of the work dir, and everything inside it:
``.git`` covers ``.git/config``, ``.git/hooks/pre-commit`` and ``vendor/lib/.git/config``.
Names are compared case-insensitively (``.GIT/config`` is ``.git/config`` on macOS and
Windows filesystems) after dropping the invisible code points HFS+ ignores (as git does), on a
path already normalised and resolved through symlinks by the sandbox. Files that run only when
you run the project yourself (``Makefile``, ``package.json`` scripts, ``setup.py``, tests) are
the project's code, reviewed like any other change, and are not listed.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Protected:
    """One entry: consecutive path names (fnmatch, lower case) and what they make run."""

    names: tuple[str, ...]
    why: str


_NAMES: dict[str, tuple[str, ...]] = {
    "git runs hooks and commands named in it": (".git", ".gitconfig", ".lfsconfig"),
    "it picks git filter and diff drivers": (".gitattributes",),
    "git clones and updates submodules from it": (".gitmodules",),
    "it runs hooks at git commit": (".husky", ".pre-commit-config.yaml"),
    "it sets what openheim may do": (".openheim",),
    "direnv runs it when a shell enters the folder": (".envrc",),
    "a shell runs it when it starts": (
        ".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshrc",
        ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
        ".config/fish",
    ),
    "ssh runs commands named in it": (".ssh",),
    "the editor runs tasks and tools named in it": (
        ".vscode", "*.code-workspace", ".idea", ".devcontainer", ".devcontainer.json",
    ),
    "CI runs it with the repository's secrets": (
        ".github/workflows", ".github/actions", ".gitlab-ci.yml",
    ),
}  # fmt: skip
PROTECTED: tuple[Protected, ...] = tuple(
    Protected(tuple(name.split("/")), why) for why, names in _NAMES.items() for name in names
)
"""Every protected name; docs/safety.md lists the same."""

_IGNORABLE = re.compile("[\u200b-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ drops from names, so ``.g\\u200cit`` is ``.git`` there."""


def folded(name: str) -> str:
    """A path name as a case-insensitive filesystem compares it."""
    return _IGNORABLE.sub("", name).casefold()


def protected_reason(path: str) -> str | None:
    """Why ``path`` (relative to the work dir, POSIX, normalised) is protected, or None."""
    parts = [folded(p) for p in path.split("/") if p not in ("", ".")]
    for entry in PROTECTED:
        size = len(entry.names)
        for start in range(len(parts) - size + 1):
            run = parts[start : start + size]
            if all(fnmatch.fnmatchcase(n, p) for n, p in zip(run, entry.names, strict=True)):
                return f"changes {path}, a protected path: {entry.why}"
    return None
