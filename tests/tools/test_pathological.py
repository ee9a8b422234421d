"""Patterns that take exponential or high-polynomial time in a backtracking engine finish at
once. Every model-, project- or config-supplied pattern is in a table: adding one is one line.
Each call must end well under a second; before RE2, each of them ran for minutes or hours.
Fixed patterns over a long text from the project or the model are here too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openheim.redaction.secrets import SecretPolicy
from openheim.safety.risk import is_fork_bomb
from openheim.safety.rules import path_regex
from openheim.skills.manager import _first_line
from openheim.tools.base import Tool, ToolContext
from openheim.tools.builtin.gitignore import GitIgnores
from openheim.tools.builtin.listing import glob
from openheim.tools.builtin.search import search
from openheim.tools.sandbox import PathSandbox
from tests.tools.support import ok

LONG = "a" * 120
STARS = "*a" * 12 + "*b"
"""A glob whose backtracking translation tries about n**12 splits of a name of n ``a``."""
WELL_UNDER = 1.0
BOUND = 10.0


@dataclass(frozen=True)
class Call:
    """A tool call over a planted tree, and a line its result must contain."""

    tool: Tool
    args: dict[str, Any]
    expect: str
    files: dict[str, str] = field(default_factory=dict)


CALLS = [
    Call(search, {"pattern": "(a+)+$"}, "no matches", {"line.txt": "a" * 34 + "!\n"}),
    Call(search, {"pattern": "(a|aa)+$"}, "no matches", {"line.txt": "a" * 80 + "!\n"}),
    Call(search, {"pattern": "(a|a?)+b"}, "no matches", {"line.txt": "a" * 40 + "\n"}),
    Call(search, {"pattern": r"^(\w+\s?)*$"}, "no matches", {"w.txt": "word " * 30 + "!\n"}),
    Call(search, {"pattern": "(x+x+)+y"}, "no matches", {"x.txt": "x" * 50 + "\n"}),
    Call(search, {"pattern": "(.*a){20}!"}, "no matches", {"a.txt": "a" * 200 + "\n"}),
    Call(search, {"pattern": "(a+)+$"}, "many.txt:1000: a", {"many.txt": "a!\n" * 999 + "aa"}),
    Call(search, {"pattern": "x", "glob": STARS}, "no matches", {LONG: "x\n"}),
    Call(search, {"pattern": "x"}, f"{LONG}:1: x", {".gitignore": f"{STARS}\n", LONG: "x\n"}),
    Call(glob, {"pattern": STARS}, "no files match", {LONG: ""}),
    Call(glob, {"pattern": f"**/{STARS}"}, "no files match", {f"d/e/{LONG}": ""}),
    Call(glob, {"pattern": "?*" * 12 + "b"}, "no files match", {LONG: ""}),
    Call(glob, {"pattern": "[a]*" * 12 + "b"}, "no files match", {LONG: ""}),
    Call(glob, {"pattern": "**/" * 12 + "*b"}, "no files match", {"/".join("a" * 20): ""}),
    Call(glob, {"pattern": STARS[:-1] + "a"}, LONG, {LONG: ""}),
]


def plant(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


@pytest.mark.parametrize("case", CALLS, ids=lambda c: f"{c.tool.name}:{c.args}"[:70])
async def test_tool_call_finishes_at_once(case: Call, ctx: ToolContext) -> None:
    plant(ctx.cwd, case.files)
    started = time.monotonic()
    text = await asyncio.wait_for(ok(case.tool, ctx, **case.args), BOUND)
    assert time.monotonic() - started < WELL_UNDER
    assert case.expect in text


def _gitignore_verdict(tmp_path: Path) -> bool:
    (tmp_path / ".gitignore").write_text(f"{STARS}\n")
    ignores = GitIgnores(PathSandbox(tmp_path))
    ignores.load(())
    return ignores.ignored((LONG,), False)


MATCHERS: list[tuple[str, Callable[[Path], object], object]] = [
    ("path rule", lambda _: path_regex(STARS).fullmatch(LONG), False),
    ("path rule **", lambda _: path_regex(f"**/{STARS}").fullmatch(f"x/y/{LONG}"), False),
    ("path rule many **", lambda _: path_regex("**/" * 12 + "b").fullmatch("a/" * 60), False),
    ("deny_read", lambda tmp: SecretPolicy([STARS]).match(tmp / LONG, LONG), None),
    ("deny_read **", lambda tmp: SecretPolicy([f"**/{STARS}"]).match(tmp / LONG), None),
    (".gitignore", _gitignore_verdict, False),
    ("skill heading", lambda _: _first_line("#" + " " * 50_000 + "#x"), "#x"),
    ("fork bomb, long word", lambda _: is_fork_bomb("a" * 100_000), False),
    ("fork bomb, long blank", lambda _: is_fork_bomb("f(){ f |" + " " * 100_000 + "x"), False),
    ("fork bomb, many heads", lambda _: is_fork_bomb("f(){ " * 20_000 + "f|f&"), True),
]


@pytest.mark.parametrize(("name", "check", "expect"), MATCHERS, ids=[m[0] for m in MATCHERS])
def test_matcher_finishes_at_once(
    name: str, check: Callable[[Path], object], expect: object, tmp_path: Path
) -> None:
    started = time.monotonic()
    assert check(tmp_path) == expect
    assert time.monotonic() - started < WELL_UNDER
