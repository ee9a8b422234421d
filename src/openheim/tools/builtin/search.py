"""``search``: a regular expression over the files of a folder, honouring ``.gitignore``."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from openheim.errors import ToolError
from openheim.tools.base import ToolContext, ToolKind
from openheim.tools.builtin.listing import SKIP_DIRS, glob_regex
from openheim.tools.decorator import tool

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 5 * 1024 * 1024


class _Ignores:
    """The .gitignore files met on the way down, each applied to paths below its folder."""

    def __init__(self) -> None:
        self.specs: list[tuple[Path, Any]] = []

    def load(self, folder: Path) -> None:
        ignore = folder / ".gitignore"
        if ignore.is_file():
            import pathspec  # only when there is a .gitignore: it costs start-up time

            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            self.specs.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for folder, spec in self.specs:
            if path.is_relative_to(folder):
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
        return False


def _files(base: Path, root: Path) -> Iterator[Path]:
    ignores = _Ignores()
    for parent in reversed([base, *base.parents]):
        if parent.is_relative_to(root):
            ignores.load(parent)
    for folder, dirs, files in os.walk(base, followlinks=False):
        here = Path(folder)
        if here != base:
            ignores.load(here)
        dirs[:] = sorted(
            d for d in dirs if d not in SKIP_DIRS and not ignores.ignored(here / d, True)
        )
        for name in sorted(files):
            path = here / name
            if not ignores.ignored(path, False) and not path.is_symlink():
                yield path


def _matches(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return
        data = path.read_bytes()
    except OSError:
        return
    if b"\0" in data[:8192]:
        return
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if regex.search(line):
            yield number, line


def _search(ctx: ToolContext, base: Path, regex: re.Pattern[str], name_glob: str | None) -> str:
    name_regex = glob_regex(name_glob) if name_glob else None
    files = [base] if base.is_file() else _files(base, ctx.sandbox.root)
    out: list[str] = []
    for path in files:
        if name_regex and not name_regex.match(path.relative_to(base).as_posix() or path.name):
            continue
        for number, line in _matches(path, regex):
            text = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
            out.append(f"{ctx.display(path)}:{number}: {text}")
            if len(out) == MAX_MATCHES:
                out.append(f"[stopped at {MAX_MATCHES} matches; narrow the pattern or the path]")
                return "\n".join(out)
    return "\n".join(out) if out else "no matches"


@tool(read_only=True, kind=ToolKind.SEARCH)
async def search(
    ctx: ToolContext,
    pattern: Annotated[str, "Regular expression (Python syntax) to look for in each line"],
    path: Annotated[str, "File or directory to search, relative to the working directory"] = ".",
    glob: Annotated[str | None, "Only search files whose path matches this glob"] = None,
    ignore_case: Annotated[bool, "Match without regard to case"] = False,
) -> str:
    """Search file contents with a regular expression. Skips binary files and what .gitignore
    excludes; prints at most 200 matches as 'path:line: text'."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as err:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {err}", hint="escape special characters"
        ) from None
    base = ctx.path(path)
    if not base.exists():
        raise ToolError(f"{ctx.display(base)} does not exist", hint="check the path")
    return await asyncio.to_thread(_search, ctx, base, regex, glob)
