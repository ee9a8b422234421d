"""``search``: a regular expression over the files of a folder, honouring ``.gitignore``.

Ignore rules follow git: every ``.gitignore`` from the work dir down applies to the paths below
its folder, and a deeper file takes precedence over a shallower one (so a nested ``!keep.log``
re-includes what the root file excluded). An ignored folder is not entered. ``.git``, symlinks,
binary files and files over 10 MiB are skipped, and so are files matching the secret policy
(``ToolContext.is_secret``; a note counts them). Files and folders are opened from a descriptor
of the work dir, one component at a time (``fs.walk``, ``fs.open_regular``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.builtin.fs import (
    BINARY_PROBE,
    Entry,
    kind_of,
    looks_binary,
    open_regular,
    open_regular_at,
    run_blocking,
    walk,
)
from openheim.tools.builtin.patterns import GlobPattern
from openheim.tools.decorator import tool
from openheim.tools.sandbox import PathSandbox

if TYPE_CHECKING:
    import pathspec

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 10 * 1024 * 1024


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
        import pathspec  # only once a .gitignore exists: importing it costs start-up time

        self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines)

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


@dataclass
class _Search:
    """One search run: what to look for, where, and what was found so far."""

    ctx: ToolContext
    regex: re.Pattern[str]
    names: GlobPattern | None
    matches: list[str] = field(default_factory=list)
    files: int = 0
    too_big: int = 0
    secret: int = 0

    @property
    def full(self) -> bool:
        return len(self.matches) >= MAX_MATCHES

    def scan(self, path: Path, folder: int | None = None) -> None:
        """Add the matching lines of one file (opened in ``folder`` if given, a descriptor of the
        folder holding it); secret, binary, huge and unreadable files are skipped."""
        if self.ctx.is_secret(path):
            self.secret += 1
            return
        try:
            if folder is None:
                fh = open_regular(self.ctx.sandbox, path)
            else:
                fh = open_regular_at(folder, path.name)
            with fh:
                if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
                    self.too_big += 1
                    return
                if looks_binary(fh.read(BINARY_PROBE)):
                    return
                fh.seek(0)
                self.files += 1
                shown = self.ctx.display(path)
                for number, raw in enumerate(fh, 1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if found := self.regex.search(line):
                        self.matches.append(f"{shown}:{number}: {_clip(line, found.start())}")
                        if self.full:
                            return
        except OSError:
            return


def _clip(line: str, start: int) -> str:
    """At most MAX_LINE_CHARS of ``line``, keeping the match in view."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    begin = max(0, min(start - MAX_LINE_CHARS // 3, len(line) - MAX_LINE_CHARS))
    end = begin + MAX_LINE_CHARS
    return ("…" if begin else "") + line[begin:end] + ("…" if end < len(line) else "")


def _ignores_for(sandbox: PathSandbox, base_parts: tuple[str, ...]) -> GitIgnores:
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


def _candidates(run: _Search, base: Path, stop: threading.Event) -> Iterator[Entry]:
    """Files below ``base`` that git would not ignore and the name glob accepts."""
    base_parts = base.relative_to(run.ctx.sandbox.root).parts
    ignores = _ignores_for(run.ctx.sandbox, base_parts)

    def descend(entry: Entry) -> bool:
        parts = base_parts + entry.rel
        if ignores.ignored(parts, True) or (run.names and not run.names.may_contain(entry.rel)):
            return False
        ignores.load(parts)
        return True

    for entry in walk(run.ctx.sandbox, base, descend=descend, stop=stop):
        if entry.kind != "file" or ignores.ignored(base_parts + entry.rel, False):
            continue
        if run.names is None or run.names.matches(entry.rel):
            yield entry


def _search(run: _Search, base: Path, stop: threading.Event) -> str:
    kind = kind_of(run.ctx.sandbox, base)
    if kind == "file":
        run.scan(base)
    elif kind == "dir":
        for entry in _candidates(run, base, stop):
            run.scan(entry.path, entry.folder)
            if run.full:
                break
    else:
        raise ToolError(f"{run.ctx.display(base)} does not exist", hint="check the path")
    return _report(run, run.ctx.display(base))


def _report(run: _Search, shown: str) -> str:
    notes = []
    if run.full:
        notes.append(f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    if run.too_big:
        notes.append(f"[skipped {run.too_big} files over 10 MiB]")
    if run.secret:
        files = "file" if run.secret == 1 else "files"
        notes.append(f"[skipped {run.secret} {files} matching secret patterns; never shown]")
    if not run.matches:
        where = f"{run.files} file{'s' if run.files != 1 else ''} under {shown}"
        notes.insert(0, f"no matches for {run.regex.pattern!r} in {where}")
    return "\n".join(run.matches + notes)


@tool(read_only=True, kind=ToolKind.SEARCH)
async def search(
    ctx: ToolContext,
    pattern: Annotated[str, "Regular expression (Python syntax) matched against each line"],
    path: Annotated[str, "File or folder to search, relative to the working directory"] = ".",
    glob: Annotated[
        str | None,
        "Only search files matching this glob, e.g. '*.py' (file name) or 'src/**/*.ts' "
        "(path relative to `path`)",
    ] = None,
    ignore_case: Annotated[bool, "Match letters regardless of case"] = False,
) -> str:
    """Search file contents for a regular expression, line by line. Prints 'path:line: text'
    for each matching line (long lines are shortened around the match), at most 200 matches; if
    the note says it stopped, narrow the pattern, path or glob. Skips files excluded by .gitignore,
    the .git folder, binary files and symlinks."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as err:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {err}",
            hint="fix the pattern; escape characters such as ( [ { . * + ? with a backslash "
            "to match them literally",
        ) from None
    names = None
    if glob:
        names = GlobPattern(glob if "/" in glob else f"**/{glob}")
    base = ctx.path(path)
    run = _Search(ctx, regex, names)
    return await run_blocking(lambda stop: _search(run, base, stop))
