"""write_file and edit_file report what they changed as a FileDiff of the whole text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.events import FileDiff
from openheim.tools.base import ToolContext
from openheim.tools.builtin import files
from openheim.tools.builtin.files import edit_file, write_file
from tests.tools.support import call


async def test_a_new_file_has_no_old_text(ctx: ToolContext, work: Path) -> None:
    out = await call(write_file, ctx, path="pkg/mod.py", content="x = 1\n")
    assert out.content == "wrote 6 bytes to pkg/mod.py (created)"
    assert out.diff == FileDiff(str(work / "pkg/mod.py"), None, "x = 1\n")
    assert Path(out.diff.path).is_absolute()


async def test_a_replaced_file_shows_its_old_text(ctx: ToolContext, work: Path) -> None:
    (work / "f.txt").write_bytes(b"caf\xe9\r\nend\r\n")
    out = await call(write_file, ctx, path="f.txt", content="café\n")
    assert out.content == "wrote 6 bytes to f.txt (replaced)"
    assert out.diff == FileDiff(str(work / "f.txt"), "caf\ufffd\r\nend\r\n", "café\n")
    assert (work / "f.txt").read_text() == "café\n"


async def test_an_edit_shows_the_whole_text_before_and_after(ctx: ToolContext, work: Path) -> None:
    (work / "f.py").write_text("a = 1\nb = 1\nc = 2\n")
    out = await call(
        edit_file, ctx, path="f.py", old_string="= 1", new_string="= 3", replace_all=True
    )
    assert out.content == "replaced 2 occurrences in f.py"
    assert out.diff == FileDiff(
        str(work / "f.py"), "a = 1\nb = 1\nc = 2\n", "a = 3\nb = 3\nc = 2\n"
    )


async def test_undecodable_bytes_stay_on_disk_but_not_in_the_diff(
    ctx: ToolContext, work: Path
) -> None:
    (work / "f.txt").write_bytes(b"caf\xe9\r\nold line\r\n")
    out = await call(edit_file, ctx, path="f.txt", old_string="old line\n", new_string="new\n")
    assert (work / "f.txt").read_bytes() == b"caf\xe9\r\nnew\r\n"
    assert out.diff == FileDiff(
        str(work / "f.txt"), "caf\ufffd\r\nold line\r\n", "caf\ufffd\r\nnew\r\n"
    )


async def test_a_failed_edit_changes_nothing(ctx: ToolContext, work: Path) -> None:
    (work / "f.txt").write_text("same\nsame\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        await call(edit_file, ctx, path="f.txt", old_string="same", new_string="other")
    assert (work / "f.txt").read_text() == "same\nsame\n"


async def test_texts_over_the_limit_get_no_diff(
    ctx: ToolContext, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "MAX_DIFF_BYTES", 10)
    (work / "big.txt").write_text("0123456789A\n")
    replaced = await call(write_file, ctx, path="big.txt", content="short\n")
    assert (replaced.content, replaced.diff) == ("wrote 6 bytes to big.txt (replaced)", None)
    edited = await call(edit_file, ctx, path="big.txt", old_string="short", new_string="a" * 20)
    assert (edited.content, edited.diff) == ("replaced 1 occurrence in big.txt", None)
    assert (work / "big.txt").read_text() == "a" * 20 + "\n"
    small = await call(write_file, ctx, path="big.txt", content="tiny\n")
    assert small.diff is None  # the old text on disk is over the limit
    fits = await call(write_file, ctx, path="big.txt", content="ok\n")
    assert fits.diff == FileDiff(str(work / "big.txt"), "tiny\n", "ok\n")


async def test_an_unreadable_old_file_is_replaced_without_a_diff(
    ctx: ToolContext, work: Path
) -> None:
    os.mkfifo(work / "pipe")
    out = await call(write_file, ctx, path="pipe", content="now a file\n")
    assert (out.content, out.diff) == ("wrote 11 bytes to pipe (replaced)", None)
    assert (work / "pipe").read_text() == "now a file\n"
