"""``.gitignore`` rules as git applies them, for ``search``.

Every ``.gitignore`` from the work dir down applies to the paths below its folder, and a deeper
file takes precedence over a shallower one (so a nested ``!keep.log`` re-includes what the root
file excluded). The files belong to the project, so their patterns are matched with RE2
(pathspec's ``re2`` backend): a line such as ``*a*a*a*a*a*a*b`` cannot make a walk hang. A
line that is not a valid pattern (``[z-a]``, a trailing backslash) is skipped, as git does.
Each file is opened from a descriptor of the work dir, one component at a time
(``fs.open_regular``), so a folder swapped for a symlink cannot make it read elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openheim.tools.builtin.fs import open_regular
from openheim.tools.sandbox import PathSandbox

if TYPE_CHECKING:
    import pathspec


class GitIgnores:
    """The ``.gitignore`` files met from the work dir down, keyed by their folder's parts."""

    def __init__(self, sandbox: PathSandbox) -> None:
        self.sandbox = sandbox
        self._specs: dict[tuple[str, ...], pathspec.GitIgnoreSpec] = {}

    def load(self, folder: tuple[str, ...]) -> None:
        """Read ``folder/.gitignore`` (parts relative to the root) if it is a regular file."""
        path = self.sandbox.root.joinpath(*folder, ".gitignore")
        try:
            with open_regular(self.sandbox, path) as fh:
                lines = fh.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return
        try:
            spec = _spec(lines)
        except Exception:  # pathspec raises a different type per backend and per problem
            spec = _spec([line for line in lines if _valid(line)])
        self._specs[folder] = spec

    def ignored(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        """Whether git would ignore ``parts``; the deepest ``.gitignore`` with a verdict wins."""
        if not self._specs:
            return False
        for depth in range(len(parts) - 1, -1, -1):
            spec = self._specs.get(parts[:depth])
            if spec is None:
                continue
            rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return bool(verdict)
        return False


def _spec(lines: list[str]) -> pathspec.GitIgnoreSpec:
    import pathspec  # only once a .gitignore exists: importing it costs start-up time

    return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")


def _valid(line: str) -> bool:
    """Whether one line compiles; git skips a line that is not a valid pattern, and so do we."""
    try:
        _spec([line])
    except Exception:
        return False
    return True


def ignores_for(sandbox: PathSandbox, base_parts: tuple[str, ...]) -> GitIgnores:
    """The rules that apply below ``base_parts``: those of every folder from the root down.

    A folder that is itself ignored but was named explicitly (``path="node_modules/x"``) is
    searched as if it were a root: only its own and nested ``.gitignore`` files apply.
    """
    ignores = GitIgnores(sandbox)
    for depth in range(len(base_parts) + 1):
        ignores.load(base_parts[:depth])
    if base_parts and ignores.ignored(base_parts, True):
        ignores = GitIgnores(sandbox)
        ignores.load(base_parts)
    return ignores
