from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.files.atomic import atomic_write
from openheim.tools.base import ToolContext
from openheim.tools.builtin.files import edit_file, write_file
from tests.tools.support import ok


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


async def test_write_creates_parents_and_reports_size(ctx: ToolContext, work: Path) -> None:
    text = await ok(write_file, ctx, path="src/pkg/mod.py", content="x = 1\n")
    assert text == "wrote 6 bytes to src/pkg/mod.py (created)"
    assert (work / "src/pkg/mod.py").read_text() == "x = 1\n"
    assert leftovers(work / "src/pkg") == []


async def test_write_replaces_atomically_and_keeps_the_mode(ctx: ToolContext, work: Path) -> None:
    script = work / "run.sh"
    script.write_text("old\n")
    script.chmod(0o751)
    inode = script.stat().st_ino
    text = await ok(write_file, ctx, path="run.sh", content="new ✓\n")
    assert text == "wrote 8 bytes to run.sh (replaced)"  # the check mark is 3 bytes
    assert script.read_text() == "new ✓\n"
    assert script.stat().st_mode & 0o777 == 0o751
    assert script.stat().st_ino != inode  # a new file was renamed into place
    assert leftovers(work) == []


async def test_new_files_get_the_umask_mode(ctx: ToolContext, work: Path) -> None:
    old = os.umask(0o027)
    try:
        await ok(write_file, ctx, path="f.txt", content="x")
    finally:
        os.umask(old)
    assert (work / "f.txt").stat().st_mode & 0o777 == 0o640


async def test_write_refuses_paths_outside(
    ctx: ToolContext, work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "target.txt").write_text("untouched")
    (work / "link").symlink_to(outside)
    (work / "file_link").symlink_to(outside / "target.txt")
    for path in (
        "../x.txt",
        str(outside / "y.txt"),
        "link/target.txt",
        "file_link",
        "link/new.txt",
    ):
        with pytest.raises(SandboxError):
            await ok(write_file, ctx, path=path, content="pwned")
    assert (outside / "target.txt").read_text() == "untouched"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]


async def test_write_errors_for_a_directory_and_a_file_in_the_way(
    ctx: ToolContext, work: Path
) -> None:
    (work / "dir").mkdir()
    (work / "plain").write_text("file")
    with pytest.raises(ToolError, match="dir is a directory"):
        await ok(write_file, ctx, path="dir", content="x")
    with pytest.raises(ToolError, match="a file stands where a folder"):
        await ok(write_file, ctx, path="plain/child.txt", content="x")
    with pytest.raises(SandboxError, match="work dir itself"):
        await ok(write_file, ctx, path=".", content="x")


def test_atomic_write_replaces_a_planted_symlink_instead_of_following_it(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    atomic_write(link, b"new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert victim.read_text() == "keep"


def test_atomic_write_removes_its_temp_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write(target, b"data")
    assert [p.name for p in tmp_path.iterdir()] == ["dir"]


async def test_edit_replaces_a_unique_string(ctx: ToolContext, work: Path) -> None:
    (work / "a.py").write_text("def f():\n    return 1\n")
    text = await ok(edit_file, ctx, path="a.py", old_string="return 1", new_string="return 2")
    assert text == "replaced 1 occurrence in a.py"
    assert (work / "a.py").read_text() == "def f():\n    return 2\n"
    assert leftovers(work) == []


async def test_edit_not_found_suggests_read_file(ctx: ToolContext, work: Path) -> None:
    (work / "a.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match=r"was not found in a\.py") as err:
        await ok(edit_file, ctx, path="a.py", old_string="x = 2", new_string="x = 3")
    assert err.value.hint and "read_file" in err.value.hint
    assert (work / "a.py").read_text() == "x = 1\n"


async def test_edit_many_matches_needs_context_or_replace_all(ctx: ToolContext, work: Path) -> None:
    (work / "a.py").write_text("a = 1\nb = 1\nc = 1\n")
    with pytest.raises(ToolError, match=r"occurs 3 times in a\.py") as err:
        await ok(edit_file, ctx, path="a.py", old_string="= 1", new_string="= 2")
    assert err.value.hint and "replace_all" in err.value.hint
    assert (work / "a.py").read_text() == "a = 1\nb = 1\nc = 1\n"
    text = await ok(
        edit_file, ctx, path="a.py", old_string="= 1", new_string="= 2", replace_all=True
    )
    assert text == "replaced 3 occurrences in a.py"
    assert (work / "a.py").read_text() == "a = 2\nb = 2\nc = 2\n"


async def test_edit_argument_errors(ctx: ToolContext, work: Path) -> None:
    (work / "a.py").write_text("x\n")
    with pytest.raises(ToolError, match="identical"):
        await ok(edit_file, ctx, path="a.py", old_string="x", new_string="x")
    with pytest.raises(ToolError, match="old_string is empty"):
        await ok(edit_file, ctx, path="a.py", old_string="", new_string="y")
    with pytest.raises(ToolError, match=r"missing\.py does not exist") as err:
        await ok(edit_file, ctx, path="missing.py", old_string="x", new_string="y")
    assert err.value.hint and "write_file" in err.value.hint


async def test_edit_keeps_crlf_and_undecodable_bytes(ctx: ToolContext, work: Path) -> None:
    path = work / "win.txt"
    path.write_bytes(b"caf\xe9\r\nold line\r\nend\r\n")
    await ok(edit_file, ctx, path="win.txt", old_string="old line\nend", new_string="new\nend")
    assert path.read_bytes() == b"caf\xe9\r\nnew\r\nend\r\n"


async def test_edit_refuses_binary_files_and_keeps_the_mode(ctx: ToolContext, work: Path) -> None:
    (work / "blob").write_bytes(b"\x00abc")
    with pytest.raises(ToolError, match="binary"):
        await ok(edit_file, ctx, path="blob", old_string="abc", new_string="x")
    script = work / "s.sh"
    script.write_text("echo a\n")
    script.chmod(0o700)
    await ok(edit_file, ctx, path="s.sh", old_string="a", new_string="b")
    assert script.stat().st_mode & 0o777 == 0o700


async def test_edit_refuses_a_symlink_out(
    ctx: ToolContext, work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "t.txt"
    outside.write_text("secret")
    (work / "t.txt").symlink_to(outside)
    with pytest.raises(SandboxError):
        await ok(edit_file, ctx, path="t.txt", old_string="secret", new_string="x")
    assert outside.read_text() == "secret"
