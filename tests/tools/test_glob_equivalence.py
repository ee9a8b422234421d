"""The linear (RE2) glob matcher agrees with the backtracking one it replaced on ordinary
patterns and paths: every pattern of ``PATTERNS`` against every path of ``PATHS``."""

from __future__ import annotations

import itertools

import pytest

from openheim.tools.builtin.patterns import GlobPattern
from tests.tools.glob_reference import ReferenceGlob

PATTERNS = [
    "*", "**", "*.py", "**/*.py", "src/**", "src/**/*.py", "src/*/test_?.py", "**/test_*.py",
    "?.md", "a?c", "[ab]*", "[!ab]*", "[^ab]*", "[a-c]x", "[]]x", "[!]]x", "[-a]*", "[a-]*",
    "a[b", "a]b", "a\\*b", "a\\?", "*.[ch]", "d*/f", "**/d*/**/f", "docs/**/*.md", "*.tar.gz",
    "**/.*", ".*", "x y/*", "ünï/*.txt", "*ö*", "a+b(c)", "$x^", "{a,b}", "**/**/x", "*/*/*",
    "*/", "a/**/b/**/c", "\\[x]", "[[]x", "*\\", "[.]*", "[/]x", "(x)|y", "a{2}",
]  # fmt: skip
PATHS = [
    "a.py", "src/a.py", "src/pkg/test_a.py", "src/pkg/test_ab.py", "src/x/y/z.py", "docs/a.md",
    "docs/g/h.md", "b.md", "abc", "axc", "a/c", "bx", "cx", "]x", "-", "-x", "a-", "a[b", "a]b",
    "a*b", "axb", "a?", "ab", "m.c", "m.h", "m.o", "d1/f", "d1/x/f", "d/e/f/g/f", "x.tar.gz",
    ".hidden", "dir/.env", "x y/z", "ünï/ä.txt", "böse", "a+b(c)", "$x^", "{a,b}", "a", "x",
    "a/b/c", "a/x/b/y/c", "[x]", "[x", "x\\", ".x", "(x)|y", "aa", "line\nbreak", "a/b",
    "caf\udce9.py", "\udcff", "x/\udcff\udcfe/y.py",
]  # fmt: skip


def _reference(pattern: str) -> ReferenceGlob:
    return ReferenceGlob(GlobPattern(pattern).segments)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_matches_agree(pattern: str) -> None:
    new, old = GlobPattern(pattern), _reference(pattern)
    differ = [p for p in PATHS if new.matches(p.split("/")) != old.matches(p.split("/"))]
    assert differ == []


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pruning_agrees(pattern: str) -> None:
    new, old = GlobPattern(pattern), _reference(pattern)
    folders = {tuple(p.split("/")[:n]) for p in PATHS for n in range(1, p.count("/") + 1)}
    differ = [f for f in sorted(folders) if new.may_contain(f) != old.may_contain(f)]
    assert differ == []


def test_the_table_exercises_both_answers() -> None:
    """Agreement on a table where everything fails to match would prove nothing."""
    pairs = list(itertools.product(PATTERNS, PATHS))
    hits = sum(GlobPattern(p).matches(path.split("/")) for p, path in pairs)
    assert 100 < hits < len(pairs) - 100
