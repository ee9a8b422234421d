"""``search``: a regular expression over the files of a folder, honouring ``.gitignore``.

Ignore rules follow git (``gitignore.py``); an ignored folder is not entered. ``.git``,
symlinks, binary files, files over 10 MiB and lines over 1 MiB are skipped, and so are files
matching the secret policy (``ToolContext.is_secret``; a note counts them). Files and folders
are opened from a descriptor of the work dir, one component at a time (``fs.walk``,
``fs.open_regular``).

The pattern is RE2 syntax (``openheim.formats.regex``), matched in time linear in the text, and the
search runs in a worker with a time limit (``bounded.py``): it checks between files and between
chunks of a file whether the call was cancelled or the time is up, and then ends with what it
found and a note saying it stopped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from openheim.errors import ToolError
from openheim.formats.regex import PatternError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.builtin.bounded import Budget, run_bounded
from openheim.tools.builtin.fs import (
    BINARY_PROBE,
    Entry,
    HardLinkError,
    kind_of,
    looks_binary,
    open_regular,
    open_regular_at,
    walk,
)
from openheim.tools.builtin.gitignore import ignores_for
from openheim.tools.builtin.lines import LineMatcher, hits, normalise
from openheim.tools.builtin.patterns import GlobPattern
from openheim.tools.decorator import tool

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 10 * 1024 * 1024
PATTERN_HINT = (
    "search uses RE2 syntax, which runs in linear time: no lookaround, backreferences or "
    "possessive quantifiers; escape characters such as ( [ { . * + ? with a backslash to "
    "match them literally"
)


@dataclass
class _Search:
    """One search run: what to look for, where, and what was found so far."""

    ctx: ToolContext
    matcher: LineMatcher
    names: GlobPattern | None
    matches: list[str] = field(default_factory=list)
    files: int = 0
    too_big: int = 0
    long_lines: int = 0
    secret: int = 0
    linked: int = 0

    @property
    def full(self) -> bool:
        return len(self.matches) >= MAX_MATCHES

    def scan(self, path: Path, budget: Budget, folder: int | None = None) -> None:
        """Add the matching lines of one file (opened in ``folder`` if given, a descriptor of the
        folder holding it); secret, hard-linked, binary, huge and unreadable files are skipped."""
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
                data = fh.read(MAX_FILE_BYTES + 1)
        except HardLinkError:
            self.linked += 1
            return
        except OSError:
            return
        if len(data) > MAX_FILE_BYTES:
            self.too_big += 1
            return
        if looks_binary(data[:BINARY_PROBE]):
            return
        self.files += 1
        shown = ""
        for hit in hits(self.matcher, normalise(data), budget):
            if hit.too_long:
                self.long_lines += 1
                continue
            shown = shown or self.ctx.display(path)
            self.matches.append(f"{shown}:{hit.number}: {_clip(hit.text, hit.column)}")
            if self.full:
                return


def _clip(line: str, start: int) -> str:
    """At most MAX_LINE_CHARS of ``line``, keeping the match in view."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    begin = max(0, min(start - MAX_LINE_CHARS // 3, len(line) - MAX_LINE_CHARS))
    end = begin + MAX_LINE_CHARS
    return ("…" if begin else "") + line[begin:end] + ("…" if end < len(line) else "")


def _candidates(run: _Search, base: Path, budget: Budget) -> Iterator[Entry]:
    """Files below ``base`` that git would not ignore and the name glob accepts."""
    base_parts = base.relative_to(run.ctx.sandbox.root).parts
    ignores = ignores_for(run.ctx.sandbox, base_parts)

    def descend(entry: Entry) -> bool:
        parts = base_parts + entry.rel
        if ignores.ignored(parts, True) or (run.names and not run.names.may_contain(entry.rel)):
            return False
        ignores.load(parts)
        return True

    for entry in walk(run.ctx.sandbox, base, descend=descend, stop=budget):
        if entry.kind != "file" or ignores.ignored(base_parts + entry.rel, False):
            continue
        if run.names is None or run.names.matches(entry.rel):
            yield entry


def _search(run: _Search, base: Path, budget: Budget) -> str:
    kind = kind_of(run.ctx.sandbox, base)
    if kind == "file":
        run.scan(base, budget)
    elif kind == "dir":
        for entry in _candidates(run, base, budget):
            run.scan(entry.path, budget, entry.folder)
            if run.full:
                break
    else:
        raise ToolError(f"{run.ctx.display(base)} does not exist", hint="check the path")
    return _report(run, run.ctx.display(base), budget)


def _report(run: _Search, shown: str, budget: Budget) -> str:
    matches = list(run.matches)  # a copy: after an overrun the worker may still add to it
    notes = []
    if len(matches) >= MAX_MATCHES:
        notes.append(f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    elif budget.expired:
        notes.append(budget.note("narrow the pattern, path or glob"))
    if run.too_big:
        notes.append(f"[skipped {run.too_big} files over 10 MiB]")
    if run.long_lines:
        lines = "line" if run.long_lines == 1 else "lines"
        notes.append(f"[skipped {run.long_lines} {lines} over 1 MiB]")
    if run.secret:
        files = "file" if run.secret == 1 else "files"
        notes.append(f"[skipped {run.secret} {files} matching secret patterns; never shown]")
    if run.linked:
        files = "file" if run.linked == 1 else "files"
        notes.append(
            f"[skipped {run.linked} {files} with more than one name (hard links); never shown]"
        )
    if not matches:
        where = f"{run.files} file{'s' if run.files != 1 else ''} under {shown}"
        notes.insert(0, f"no matches for {run.matcher.pattern!r} in {where}")
    return "\n".join(matches + notes)


@tool(read_only=True, kind=ToolKind.SEARCH)
async def search(
    ctx: ToolContext,
    pattern: Annotated[
        str,
        "Regular expression (RE2 syntax: like Python's, without lookaround or "
        "backreferences) matched against each line",
    ],
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
        matcher = LineMatcher.compile(pattern, ignore_case=ignore_case)
    except PatternError as err:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {err.reason}", hint=PATTERN_HINT
        ) from None
    names = None
    if glob:
        names = GlobPattern(glob if "/" in glob else f"**/{glob}")
    base = ctx.path(path)
    run = _Search(ctx, matcher, names)
    shown = ctx.display(base)
    return await run_bounded(
        lambda budget: _search(run, base, budget), lambda budget: _report(run, shown, budget)
    )
