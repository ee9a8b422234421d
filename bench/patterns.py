"""Ordinary patterns before and after RE2: the ``search`` tool and glob matching.

(a) The ``search`` tool over a generated tree of source-like files (a few matching lines in a
    few files), for a literal, a regular expression, a case-insensitive word and a pattern that
    matches nothing; beside it, in the same run, the search as it was with Python's ``re``: the
    same walk and ``.gitignore`` rules, each line decoded and matched on its own. Both must
    print the same result.
(b) The ``glob`` tool with ``**/*.py`` and ``src/*/test_?.py`` over the same tree, beside the
    same walk matching with the backtracking ``re`` translation it replaced.
(c) The matching alone: every path of the tree against the same globs, RE2 and ``re``.

Prints median and p90 in milliseconds and the ratio after / before (below 1 is faster).

    .venv/bin/python bench/patterns.py [--repeats 15] [--files 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from openheim.tools.base import ToolContext
from openheim.tools.builtin.fs import Entry, looks_binary, open_regular_at, walk
from openheim.tools.builtin.gitignore import ignores_for
from openheim.tools.builtin.listing import MAX_MATCHES as MAX_GLOB
from openheim.tools.builtin.listing import glob as glob_tool
from openheim.tools.builtin.patterns import GlobPattern
from openheim.tools.builtin.search import MAX_MATCHES, search
from openheim.tools.sandbox import PathSandbox

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.tools.glob_reference import ReferenceGlob

PATTERNS = [
    ("literal", "handle_request", False),
    ("regex", r"\bparse_\w+\(", False),
    ("ignore case", "todo", True),
    ("no match", "zebra_[0-9]+_quux", False),
]
GLOBS = ["**/*.py", "src/*/test_?.py"]
WORDS = [
    "value",
    "result",
    "items",
    "config",
    "parse_line",
    "render",
    "index",
    "count",
    "buffer",
    "state",
]


def make_tree(root: Path, files: int) -> None:
    """``files`` files of 200 code-like lines in nested folders, a .gitignore and a few hits."""
    rng = random.Random(7)
    (root / ".gitignore").write_text("build/\n*.log\n")
    for n in range(files):
        folder = root / "src" / f"pkg{n % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(200):
            a, b = rng.sample(WORDS, 2)
            lines.append(f"    {a} = {b}({i}, other_{a})  # note {rng.randint(0, 99999)}")
        if n % 97 == 0:
            lines[50] = "def handle_request(req):  # TODO: split"
            lines[120] = "    return parse_header(line)"
        name = f"test_{n % 10}.py" if n % 50 == 0 else f"module_{n}.py"
        (folder / name).write_text("\n".join(lines) + "\n")


def old_search(ctx: ToolContext, pattern: str, ignore_case: bool) -> str:
    """The search as it was: Python's ``re`` on each decoded line."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    sandbox = ctx.sandbox
    ignores = ignores_for(sandbox, ())
    matches: list[str] = []

    def descend(entry: Entry) -> bool:
        if ignores.ignored(entry.rel, True):
            return False
        ignores.load(entry.rel)
        return True

    for entry in walk(sandbox, sandbox.root, descend=descend):
        if entry.kind != "file" or ignores.ignored(entry.rel, False):
            continue
        with open_regular_at(entry.folder, entry.name) as fh:
            if looks_binary(fh.read(8192)):
                continue
            fh.seek(0)
            shown = ctx.display(entry.path)
            for number, raw in enumerate(fh, 1):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if regex.search(line):
                    matches.append(f"{shown}:{number}: {line}")
                    if len(matches) == MAX_MATCHES:
                        note = (
                            f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]"
                        )
                        return "\n".join([*matches, note])
    return "\n".join(matches)


async def timed(
    after: Callable[[], Awaitable[str]], before: Callable[[], Awaitable[str]], repeats: int
) -> tuple[list[float], list[float], str, str]:
    """Run both ``repeats`` times, alternating so that drift in the machine's load hits both."""
    times: tuple[list[float], list[float]] = ([], [])
    outs = ["", ""]
    for _ in range(repeats):
        for i, fn in enumerate((after, before)):
            start = time.perf_counter()
            outs[i] = await fn()
            times[i].append((time.perf_counter() - start) * 1000)
    return times[0], times[1], outs[0], outs[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(name: str, after: list[float], before: list[float]) -> None:
    med_a, med_b = statistics.median(after), statistics.median(before)
    print(
        f"  {name:<12} RE2 median {med_a:8.2f} ms  p90 {percentile(after, 0.9):8.2f}   "
        f"re median {med_b:8.2f} ms  p90 {percentile(before, 0.9):8.2f}   "
        f"RE2 / re = {med_a / med_b:.2f}x"
    )


async def bench_search(ctx: ToolContext, repeats: int) -> None:
    for name, pattern, ignore_case in PATTERNS:
        args = search.parse({"pattern": pattern, "ignore_case": ignore_case})

        async def after(args: object = args) -> str:
            return (await search.call(args, ctx)).content

        async def before(pattern: str = pattern, ignore_case: bool = ignore_case) -> str:
            return await asyncio.to_thread(old_search, ctx, pattern, ignore_case)

        new_times, old_times, new_out, old_out = await timed(after, before, repeats)
        if old_out and new_out != old_out:
            raise SystemExit(f"{name}: the two searches disagree")
        report(name, new_times, old_times)


def old_glob(ctx: ToolContext, glob: ReferenceGlob) -> str:
    """The glob tool's walk as it was, matching with the backtracking ``re`` translation."""
    found: list[str] = []
    sandbox = ctx.sandbox
    for entry in walk(sandbox, sandbox.root, descend=lambda e: glob.may_contain(e.rel)):
        if entry.kind != "dir" and glob.matches(entry.rel):
            if len(found) == MAX_GLOB:
                note = "narrow the pattern or set path to a subfolder"
                return "\n".join([*found, f"[stopped at {MAX_GLOB} matches; {note}]"])
            found.append(ctx.display(entry.path))
    return "\n".join(found)


async def bench_glob_tool(ctx: ToolContext, repeats: int) -> None:
    for text in GLOBS:
        args = glob_tool.parse({"pattern": text})
        reference = ReferenceGlob(GlobPattern(text).segments)

        async def after(args: object = args) -> str:
            return (await glob_tool.call(args, ctx)).content

        async def before(reference: ReferenceGlob = reference) -> str:
            return await asyncio.to_thread(old_glob, ctx, reference)

        new_times, old_times, new_out, old_out = await timed(after, before, repeats)
        if new_out != old_out:
            raise SystemExit(f"{text}: the two globs disagree")
        report(text, new_times, old_times)


async def bench_globs(root: Path, repeats: int) -> None:
    paths = [e.rel for e in walk(PathSandbox(root), root) if e.kind == "file"]
    for text in GLOBS:
        new, old = GlobPattern(text), ReferenceGlob(GlobPattern(text).segments)

        async def after(glob: GlobPattern = new) -> str:
            return str(sum(glob.matches(p) for p in paths))

        async def before(glob: ReferenceGlob = old) -> str:
            return str(sum(glob.matches(p) for p in paths))

        new_times, old_times, new_count, old_count = await timed(after, before, repeats)
        if new_count != old_count:
            raise SystemExit(f"{text}: the two matchers disagree")
        report(text, new_times, old_times)


async def main(repeats: int, files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_tree(root, files)
        ctx = ToolContext(PathSandbox(root), root)
        size = sum(p.stat().st_size for p in root.rglob("*.py")) / 1e6
        print(f"(a) search over {files} files, {size:.1f} MB, {repeats} runs each")
        await bench_search(ctx, repeats)
        print(f"(b) the glob tool over the same tree, {repeats} runs each")
        await bench_glob_tool(ctx, repeats)
        print(f"(c) glob matching alone, {files} paths, {repeats} runs each")
        await bench_globs(root, repeats)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--files", type=int, default=2000)
    options = parser.parse_args()
    asyncio.run(main(options.repeats, options.files))
