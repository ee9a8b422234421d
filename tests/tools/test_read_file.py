from __future__ import annotations

import re
from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.tools.base import ToolContext
from openheim.tools.builtin.files import MAX_READ_BYTES, read_file
from tests.tools.support import ok


def numbered(n: int, width: int = 0) -> str:
    return "".join(f"line {i:0{width}}\n" for i in range(1, n + 1))


async def test_reads_raw_text_without_line_numbers(ctx: ToolContext, work: Path) -> None:
    (work / "a.txt").write_text("alpha\nbeta\n")
    assert await ok(read_file, ctx, path="a.txt") == "alpha\nbeta\n"


async def test_offset_and_limit_select_lines_with_a_continuation_note(
    ctx: ToolContext, work: Path
) -> None:
    (work / "a.txt").write_text(numbered(10))
    text = await ok(read_file, ctx, path="a.txt", offset=3, limit=2)
    assert text == (
        "line 3\nline 4\n[lines 3-4 of 10 shown; call read_file with offset=5 to continue]"
    )
    assert await ok(read_file, ctx, path="a.txt", offset=9) == "line 9\nline 10\n"


async def test_large_file_is_cut_at_a_line_boundary_and_can_be_continued(
    ctx: ToolContext, work: Path
) -> None:
    content = numbered(30_000, width=6)  # 12 bytes a line, about 350 KiB
    (work / "big.txt").write_text(content)
    first = await ok(read_file, ctx, path="big.txt")
    body, note = first.rsplit("\n", 1)
    assert len(body.encode()) <= MAX_READ_BYTES
    assert body.endswith(("\n", "")) and body.splitlines()[-1].startswith("line ")
    match = re.fullmatch(
        r"\[lines 1-(\d+) of 30000 shown; call read_file with offset=(\d+) to continue\]", note
    )
    assert match is not None
    last, next_offset = int(match[1]), int(match[2])
    assert next_offset == last + 1 and last == MAX_READ_BYTES // 12
    assert body + "\n" == content[: len(body) + 1]
    collected, offset = "", 1
    while True:
        text = await ok(read_file, ctx, path="big.txt", offset=offset)
        found = re.search(r"\n\[lines \d+-(\d+) of 30000 shown; .*\]\Z", text)
        if found is None:
            collected += text
            break
        collected += text[: found.start() + 1]
        offset = int(found[1]) + 1
    assert collected == content


async def test_a_single_huge_line_is_cut_with_a_note(ctx: ToolContext, work: Path) -> None:
    (work / "min.js").write_text("x" * (MAX_READ_BYTES * 3) + "\nsecond\n")
    text = await ok(read_file, ctx, path="min.js")
    assert text.startswith("x" * 1000)
    assert text.count("x") == MAX_READ_BYTES
    assert "[line 1 is longer than 100 KiB" in text
    assert "[lines 1-1 of 2 shown; call read_file with offset=2 to continue]" in text
    assert await ok(read_file, ctx, path="min.js", offset=2) == "second\n"


async def test_last_line_without_newline_and_empty_file(ctx: ToolContext, work: Path) -> None:
    (work / "a.txt").write_text("one\ntwo")
    assert await ok(read_file, ctx, path="a.txt", limit=1) == (
        "one\n[lines 1-1 of 2 shown; call read_file with offset=2 to continue]"
    )
    (work / "empty.txt").write_text("")
    assert await ok(read_file, ctx, path="empty.txt") == "[empty.txt is empty]"


async def test_offset_past_the_end_is_an_error(ctx: ToolContext, work: Path) -> None:
    (work / "a.txt").write_text(numbered(3))
    with pytest.raises(ToolError, match=r"past the end of a.txt, which has 3 lines"):
        await ok(read_file, ctx, path="a.txt", offset=5)


@pytest.mark.parametrize(("args", "problem"), [({"offset": 0}, "offset"), ({"limit": 0}, "limit")])
async def test_bad_offset_or_limit(
    ctx: ToolContext, work: Path, args: dict[str, int], problem: str
) -> None:
    (work / "a.txt").write_text("x\n")
    with pytest.raises(ToolError, match=f"{problem} must be 1 or more"):
        await ok(read_file, ctx, path="a.txt", **args)


async def test_binary_file_is_refused(ctx: ToolContext, work: Path) -> None:
    (work / "img.bin").write_bytes(b"PNG\x00\x01\x02" + b"text" * 10)
    with pytest.raises(ToolError, match=r"img\.bin is a binary file"):
        await ok(read_file, ctx, path="img.bin")


async def test_invalid_utf8_is_replaced(ctx: ToolContext, work: Path) -> None:
    (work / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert await ok(read_file, ctx, path="latin1.txt") == "caf\ufffd\n"


async def test_missing_file_and_directory_errors(ctx: ToolContext, work: Path) -> None:
    (work / "sub").mkdir()
    with pytest.raises(ToolError, match=r"nope\.txt does not exist") as missing:
        await ok(read_file, ctx, path="nope.txt")
    assert missing.value.hint and "list_dir" in missing.value.hint
    with pytest.raises(ToolError, match="sub is a directory"):
        await ok(read_file, ctx, path="sub")


async def test_paths_outside_the_work_dir_are_refused(ctx: ToolContext, work: Path) -> None:
    (work / "escape").symlink_to("/etc/passwd")
    for path in ("../outside.txt", "/etc/passwd", "escape"):
        with pytest.raises(SandboxError):
            await ok(read_file, ctx, path=path)


async def test_relative_paths_resolve_against_the_session_cwd(work: Path, ctx: ToolContext) -> None:
    (work / "sub").mkdir()
    (work / "sub" / "a.txt").write_text("in sub\n")
    sub_ctx = ToolContext(ctx.sandbox, work / "sub", ctx.env)
    assert await ok(read_file, sub_ctx, path="a.txt") == "in sub\n"
