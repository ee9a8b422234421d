"""read_file, write_file and edit_file: behaviour, limits and errors."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.tools.base import Tool, ToolContext, ToolOutput
from openheim.tools.builtin.files import MAX_READ_BYTES, edit_file, read_file, write_file


async def call(tool: Tool, ctx: ToolContext, **args: Any) -> ToolOutput:
    return await tool.call(tool.parse(args), ctx)


async def text(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    return (await call(tool, ctx, **args)).content


async def test_read_whole_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    assert await text(read_file, ctx, path="a.txt") == "one\ntwo\n"


async def test_offset_and_limit(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await text(read_file, ctx, path="a.txt", offset=3, limit=2)
    assert out.startswith("line 3\nline 4\n")
    assert "[lines 3-4 of 10 shown; call read_file with offset=5 to continue]" in out


async def test_large_file_is_cut_at_a_line_boundary(ctx: ToolContext, tmp_path: Path) -> None:
    line = "x" * 99 + "\n"
    (tmp_path / "big.txt").write_text(line * 3000)  # 300 KB
    out = await text(read_file, ctx, path="big.txt")
    body, note = out.rsplit("\n[", 1)
    assert len(body.encode()) <= MAX_READ_BYTES
    assert all(len(chunk) == 99 for chunk in body.split("\n") if chunk)
    shown = body.count("\n") + 1
    assert f"offset={shown + 1}" in note
    rest = await text(read_file, ctx, path="big.txt", offset=shown + 1)
    assert rest.startswith(line)


async def test_read_errors(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "d").mkdir()
    (tmp_path / "short.txt").write_text("a\n")
    with pytest.raises(ToolError, match="binary"):
        await call(read_file, ctx, path="bin")
    with pytest.raises(ToolError, match="does not exist"):
        await call(read_file, ctx, path="nope.txt")
    with pytest.raises(ToolError, match="is a directory"):
        await call(read_file, ctx, path="d")
    with pytest.raises(ToolError, match="only 1 lines"):
        await call(read_file, ctx, path="short.txt", offset=5)
    with pytest.raises(ToolError, match="offset must be"):
        await call(read_file, ctx, path="short.txt", offset=0)
    with pytest.raises(SandboxError):
        await call(read_file, ctx, path="../../etc/passwd")


async def test_write_creates_parents_atomically(ctx: ToolContext, tmp_path: Path) -> None:
    out = await text(write_file, ctx, path="new/dir/f.txt", content="hello")
    assert out == "wrote 5 bytes to new/dir/f.txt (created)"
    assert (tmp_path / "new/dir/f.txt").read_text() == "hello"
    assert sorted(p.name for p in (tmp_path / "new/dir").iterdir()) == ["f.txt"]  # no temp files


async def test_write_replaces_and_keeps_mode(ctx: ToolContext, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    out = await text(write_file, ctx, path="run.sh", content="new")
    assert "(replaced)" in out and script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


async def test_write_refuses_outside_and_through_links(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    (tmp_path / "link").symlink_to(outside)
    with pytest.raises(SandboxError):
        await call(write_file, ctx, path="link", content="x")
    with pytest.raises(SandboxError):
        await call(write_file, ctx, path=str(outside), content="x")
    assert not outside.exists()


async def test_edit_unique_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    out = await text(edit_file, ctx, path="a.py", old_string="y = 2", new_string="y = 3")
    assert out == "replaced 1 occurrence in a.py"
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_edit_errors_and_replace_all(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aa aa aa")
    with pytest.raises(ToolError, match="occurs 3 times"):
        await call(edit_file, ctx, path="a.txt", old_string="aa", new_string="b")
    with pytest.raises(ToolError, match="not found"):
        await call(edit_file, ctx, path="a.txt", old_string="zz", new_string="b")
    with pytest.raises(ToolError, match="the same"):
        await call(edit_file, ctx, path="a.txt", old_string="aa", new_string="aa")
    assert (tmp_path / "a.txt").read_text() == "aa aa aa"  # untouched after errors
    out = await text(
        edit_file, ctx, path="a.txt", old_string="aa", new_string="b", replace_all=True
    )
    assert out == "replaced 3 occurrences in a.txt"
    assert (tmp_path / "a.txt").read_text() == "b b b"


def test_schemas_describe_arguments() -> None:
    schema = read_file.parameters
    assert schema["required"] == ["path"]
    assert schema["properties"]["offset"]["type"] == "integer"
    assert "1-based" in schema["properties"]["offset"]["description"]
    assert schema["additionalProperties"] is False
    assert read_file.capabilities.read_only and not write_file.capabilities.read_only
