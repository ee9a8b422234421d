"""list_dir, glob and search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openheim.errors import ToolError
from openheim.tools.base import Tool, ToolContext
from openheim.tools.builtin import builtin_tools
from openheim.tools.builtin.listing import MAX_ENTRIES, glob, glob_regex, list_dir
from openheim.tools.builtin.search import MAX_MATCHES, search


async def text(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    return (await tool.call(tool.parse(args), ctx)).content


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["src/a.py", "src/b.txt", "src/pkg/c.py", "docs/readme.md", "top.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"content of {rel}\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.py").write_text("x\n")
    return tmp_path


async def test_list_dir_sorted_with_markers(ctx: ToolContext, tree: Path) -> None:
    (tree / "link").symlink_to(tree / "top.py")
    out = await text(list_dir, ctx)
    assert out.splitlines() == [".git/", "docs/", f"link -> {tree / 'top.py'}", "src/", "top.py"]
    assert await text(list_dir, ctx, path="src/pkg") == "c.py"


async def test_list_dir_errors_and_cap(ctx: ToolContext, tree: Path) -> None:
    with pytest.raises(ToolError, match="not a directory"):
        await text(list_dir, ctx, path="top.py")
    many = tree / "many"
    many.mkdir()
    for i in range(MAX_ENTRIES + 5):
        (many / f"f{i:05}").touch()
    lines = (await text(list_dir, ctx, path="many")).splitlines()
    assert len(lines) == MAX_ENTRIES + 1 and "5 more entries" in lines[-1]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**/*.py", ["src/a.py", "src/pkg/c.py", "top.py"]),
        ("*.py", ["top.py"]),
        ("src/*", ["src/a.py", "src/b.txt"]),
        ("src/**", ["src/a.py", "src/b.txt", "src/pkg/c.py"]),
        ("**/?.py", ["src/a.py", "src/pkg/c.py"]),
        ("src/[ab].*", ["src/a.py", "src/b.txt"]),
        ("src/[!a].*", ["src/b.txt"]),
    ],
)
async def test_glob_patterns(
    ctx: ToolContext, tree: Path, pattern: str, expected: list[str]
) -> None:
    assert (await text(glob, ctx, pattern=pattern)).splitlines() == expected


async def test_glob_relative_to_path_and_skips_git(ctx: ToolContext, tree: Path) -> None:
    assert (await text(glob, ctx, pattern="*.py", path="src")).splitlines() == ["src/a.py"]
    assert ".git" not in await text(glob, ctx, pattern="**/*.py")
    assert "no files match" in await text(glob, ctx, pattern="*.rs")


async def test_glob_does_not_follow_linked_dirs(ctx: ToolContext, tree: Path) -> None:
    outside = tree.parent / f"{tree.name}-outside"
    outside.mkdir()
    (outside / "leak.py").write_text("x")
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    assert "leak" not in await text(glob, ctx, pattern="**/*.py")


async def test_glob_cap(ctx: ToolContext, tree: Path) -> None:
    for i in range(MAX_ENTRIES + 3):
        (tree / f"n{i:05}.log").touch()
    lines = (await text(glob, ctx, pattern="*.log")).splitlines()
    assert len(lines) == MAX_ENTRIES + 1 and "3 more matches" in lines[-1]


def test_glob_regex_double_star_matches_zero_dirs() -> None:
    assert glob_regex("**/x.py").match("x.py")
    assert glob_regex("a/**/x.py").match("a/x.py")
    assert glob_regex("a/**/x.py").match("a/b/c/x.py")
    assert not glob_regex("*.py").match("a/x.py")


async def test_search_format_and_options(ctx: ToolContext, tree: Path) -> None:
    (tree / "src/a.py").write_text("import os\nVALUE = 1\nvalue = 2\n")
    assert await text(search, ctx, pattern="VALUE") == "src/a.py:2: VALUE = 1"
    out = await text(search, ctx, pattern="value", ignore_case=True)
    assert out.splitlines() == ["src/a.py:2: VALUE = 1", "src/a.py:3: value = 2"]
    assert await text(search, ctx, pattern="content", glob="**/*.md") == (
        "docs/readme.md:1: content of docs/readme.md"
    )
    assert await text(search, ctx, pattern="nothing-like-this") == "no matches"


async def test_search_respects_gitignore(ctx: ToolContext, tree: Path) -> None:
    (tree / ".gitignore").write_text("*.txt\nbuild/\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.py").write_text("content\n")
    (tree / "src" / ".gitignore").write_text("pkg/\n")
    out = await text(search, ctx, pattern="content")
    assert "b.txt" not in out and "build/" not in out and "pkg/c.py" not in out
    assert "src/a.py" in out and "top.py" in out and ".git/" not in out


async def test_search_skips_binary_and_caps(ctx: ToolContext, tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"needle\x00\x01")
    (tree / "many.txt").write_text("needle\n" * (MAX_MATCHES + 50))
    lines = (await text(search, ctx, pattern="needle")).splitlines()
    assert len(lines) == MAX_MATCHES + 1 and "stopped at" in lines[-1]
    assert not any("blob.bin" in line for line in lines)


async def test_search_long_lines_are_cut(ctx: ToolContext, tree: Path) -> None:
    (tree / "long.txt").write_text("needle" + "y" * 1000 + "\n")
    line = await text(search, ctx, pattern="needle")
    assert len(line) < 400 and line.endswith("…")


async def test_search_bad_regex(ctx: ToolContext, tree: Path) -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        await text(search, ctx, pattern="(unclosed")


def test_builtin_set_and_shell_switch() -> None:
    names = builtin_tools(allow_shell=False).names
    assert names == ["read_file", "write_file", "edit_file", "list_dir", "glob", "search"]
    assert "execute_command" in builtin_tools(allow_shell=True)
    assert builtin_tools(allow_shell=True).select(["read_*", "search"]).names == [
        "read_file",
        "search",
    ]
