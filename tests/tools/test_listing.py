from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.tools.base import ToolContext
from openheim.tools.builtin.listing import MAX_ENTRIES, MAX_MATCHES, glob, list_dir
from openheim.tools.builtin.patterns import GlobPattern
from tests.tools.support import ok


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


async def test_list_dir_sorts_and_marks_folders_and_links(ctx: ToolContext, work: Path) -> None:
    touch(work, "b.txt", "a.txt", "zdir/x", "Cap.md")
    (work / "adir").mkdir()
    (work / "link").symlink_to("a.txt")
    (work / "out").symlink_to("/etc")
    (work / "gone").symlink_to("missing")
    text = await ok(list_dir, ctx)
    assert text.splitlines() == [
        "Cap.md",
        "a.txt",
        "adir/",
        "b.txt",
        "gone -> missing",
        "link -> a.txt",
        "out -> /etc",
        "zdir/",
    ]


async def test_list_dir_of_a_subfolder_and_an_empty_one(ctx: ToolContext, work: Path) -> None:
    touch(work, "sub/one.py", "sub/.hidden")
    (work / "empty").mkdir()
    assert (await ok(list_dir, ctx, path="sub")).splitlines() == [".hidden", "one.py"]
    assert await ok(list_dir, ctx, path="empty") == "[empty is empty]"


async def test_list_dir_caps_entries(ctx: ToolContext, work: Path) -> None:
    for i in range(MAX_ENTRIES + 5):
        (work / f"f{i:05}").touch()
    lines = (await ok(list_dir, ctx)).splitlines()
    assert len(lines) == MAX_ENTRIES + 1
    assert lines[0] == "f00000" and lines[MAX_ENTRIES - 1] == f"f{MAX_ENTRIES - 1:05}"
    assert lines[-1].startswith("[5 more entries not shown; use glob")


async def test_list_dir_errors(ctx: ToolContext, work: Path) -> None:
    touch(work, "file.txt")
    (work / "escape").symlink_to("/etc")
    with pytest.raises(ToolError, match=r"file\.txt is a file, not a directory"):
        await ok(list_dir, ctx, path="file.txt")
    with pytest.raises(ToolError, match="nope does not exist"):
        await ok(list_dir, ctx, path="nope")
    for path in ("..", "/", "escape"):
        with pytest.raises(SandboxError):
            await ok(list_dir, ctx, path=path)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**/test_?.py", "src/test_a.py", True),
        ("src/**/test_?.py", "src/x/y/test_b.py", True),
        ("src/**/test_?.py", "src/x/test_ab.py", False),
        ("src/**", "src/x/y.txt", True),
        ("src/**", "other/x", False),
        ("[ab]*.txt", "b1.txt", True),
        ("[!ab]*.txt", "b1.txt", False),
        ("[!ab]*.txt", "c1.txt", True),
        ("d*/f", "d1/f", True),
        ("d*/f", "d1/x/f", False),
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("./x.md", "x.md", True),
        ("a[b", "a[b", True),
    ],
)
def test_glob_pattern_semantics(pattern: str, path: str, matches: bool) -> None:
    assert GlobPattern(pattern).matches(path.split("/")) is matches


def test_glob_pattern_prunes_folders_that_cannot_match() -> None:
    compiled = GlobPattern("src/*/test_*.py")
    assert compiled.may_contain(("src",)) and compiled.may_contain(("src", "pkg"))
    assert not compiled.may_contain(("docs",))
    assert not compiled.may_contain(("src", "pkg", "deeper"))
    assert GlobPattern("src/**/x").may_contain(("src", "a", "b", "c"))


@pytest.mark.parametrize("pattern", ["/etc/*", "../*", "a/../../b", "", "./"])
def test_glob_pattern_refuses_absolute_climbing_and_empty(pattern: str) -> None:
    with pytest.raises(ToolError):
        GlobPattern(pattern)


async def test_glob_double_star_sorted_relative_to_the_work_dir(
    ctx: ToolContext, work: Path
) -> None:
    touch(work, "z.py", "a.py", "pkg/b.py", "pkg/sub/c.py", "pkg.py", "notes.md", "pkg/d.txt")
    text = await ok(glob, ctx, pattern="**/*.py")
    assert text.splitlines() == ["a.py", "pkg.py", "pkg/b.py", "pkg/sub/c.py", "z.py"]
    assert (await ok(glob, ctx, pattern="*.py", path="pkg")).splitlines() == ["pkg/b.py"]
    assert (await ok(glob, ctx, pattern="**", path="pkg/sub")).splitlines() == ["pkg/sub/c.py"]


async def test_glob_results_are_in_sorted_path_order(ctx: ToolContext, work: Path) -> None:
    touch(work, "a/b", "a.txt", "a-b", "a0/x", "B")
    lines = (await ok(glob, ctx, pattern="**")).splitlines()
    assert lines == sorted(lines) == ["B", "a-b", "a.txt", "a/b", "a0/x"]


async def test_glob_skips_git_and_does_not_follow_symlinked_folders(
    ctx: ToolContext, work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    touch(outside, "secret.py", "deep/s.py")
    touch(work, ".git/hooks/x.py", "real/y.py", "sub/.git")
    (work / "ext").symlink_to(outside)
    (work / "loop").symlink_to(work)
    text = await ok(glob, ctx, pattern="**/*.py")
    assert text.splitlines() == ["real/y.py"]
    assert "ext" in (await ok(glob, ctx, pattern="*")).splitlines()  # listed, not entered


async def test_glob_caps_matches(ctx: ToolContext, work: Path) -> None:
    for i in range(MAX_MATCHES + 3):
        (work / f"f{i:05}.txt").touch()
    lines = (await ok(glob, ctx, pattern="*.txt")).splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[:2] == ["f00000.txt", "f00001.txt"]
    assert lines[-1].startswith(f"[stopped at {MAX_MATCHES} matches")


async def test_glob_no_match_and_bad_base(ctx: ToolContext, work: Path) -> None:
    touch(work, "a.txt")
    assert await ok(glob, ctx, pattern="*.rs") == "no files match '*.rs' under ."
    with pytest.raises(ToolError, match=r"a\.txt is not a directory"):
        await ok(glob, ctx, pattern="*", path="a.txt")
    with pytest.raises(SandboxError):
        await ok(glob, ctx, pattern="*", path="..")
