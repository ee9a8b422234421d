"""Sandbox: the cost of resolving and opening a file component by component from a descriptor.

For each of N files a few folders deep, two ways of resolving its path inside a work dir and
reading it are timed alternately in the same process, so drift hits both alike:

* ``by path``: the previous sandbox, kept here as the baseline: a walk that ``lstat``s each
  component by path (``realpath`` for symlinks), then ``open(path, O_NOFOLLOW)``, which lets the
  kernel follow a symlink swapped into a folder of the path.
* ``by descriptor``: ``PathSandbox.resolve`` and ``open_regular``, walking ``openat(...,
  O_NOFOLLOW | O_DIRECTORY)`` from a descriptor of the work dir, as the tools do now.

Both read the whole file. It prints p50, p90 and p99 in microseconds and the ratio of the
medians, then the same for a whole ``read_file`` tool call (argument parsing and the worker
thread included) for scale. No target is set: the figures are the price of the race fix.

    .venv/bin/python bench/sandbox_open.py [--files 500] [--depth 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from openheim.process.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.builtin.files import read_file
from openheim.tools.builtin.fs import open_regular
from openheim.tools.sandbox import PathSandbox

READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def build(root: Path, files: int, depth: int) -> list[str]:
    """``files`` files of 2 KiB spread over folders ``depth`` levels deep; their relative paths."""
    names = []
    for i in range(files):
        folder = Path(*(f"d{level}_{i % 7}" for level in range(depth)))
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / f"f{i}.txt").write_bytes(b"x" * 2047 + b"\n")
        names.append((folder / f"f{i}.txt").as_posix())
    return names


def previous_resolve(root: Path, raw: str) -> Path:
    """The previous sandbox's walk: each component checked by path, links through realpath."""
    current = root
    parts = Path(os.path.normpath(root / raw)).relative_to(root).parts
    for i, part in enumerate(parts):
        candidate = current / part
        if candidate.is_symlink():
            target = Path(os.path.realpath(candidate))
            if not target.exists() or not target.is_relative_to(root):
                raise ValueError(f"{raw} leaves the work dir")
            current = target
        elif not candidate.exists():
            return candidate.joinpath(*parts[i + 1 :])
        else:
            current = candidate
    return current


def by_path(root: Path, raw: str) -> int:
    fd = os.open(previous_resolve(root, raw), READ_FLAGS)
    os.fstat(fd)
    with os.fdopen(fd, "rb") as fh:
        return len(fh.read())


def by_descriptor(sandbox: PathSandbox, raw: str) -> int:
    with open_regular(sandbox, sandbox.resolve(raw, sandbox.root)) as fh:
        return len(fh.read())


def timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(label: str, seconds: list[float]) -> float:
    p50 = statistics.median(seconds) * 1e6
    p90, p99 = percentile(seconds, 0.9) * 1e6, percentile(seconds, 0.99) * 1e6
    print(f"{label:<22} p50 {p50:7.1f} us   p90 {p90:7.1f} us   p99 {p99:7.1f} us")
    return p50


async def tool_calls(ctx: ToolContext, names: list[str]) -> list[float]:
    times = []
    for raw in names:
        start = time.perf_counter()
        await read_file.call(read_file.parse({"path": raw}), ctx)
        times.append(time.perf_counter() - start)
    return times


def run(files: int, depth: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        names = build(root, files, depth)
        sandbox = PathSandbox(root)
        old: list[float] = []
        new: list[float] = []
        for r in range(rounds):
            for i, raw in enumerate(names):
                pair = [
                    (old, partial(by_path, root, raw)),
                    (new, partial(by_descriptor, sandbox, raw)),
                ]
                for times, fn in pair if (i + r) % 2 else reversed(pair):  # neither always first
                    times.append(timed(fn))
        print(f"{files} files, {depth} folders deep, {rounds} rounds")
        ratio = report("by descriptor", new) / report("by path (previous)", old)
        print(f"ratio descriptor / path: {ratio:.2f}")
        ctx = ToolContext(sandbox, root, child_env())
        calls = asyncio.run(tool_calls(ctx, names * rounds))
        report("read_file call (now)", calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    run(args.files, args.depth, args.rounds)


if __name__ == "__main__":
    main()
