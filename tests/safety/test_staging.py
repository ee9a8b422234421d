from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.safety.staging import (
    APPLY_TOOL_NAME,
    MAX_STAGED,
    TOKEN_TTL,
    StagingArea,
    staging_tools,
)
from openheim.tools.base import Tool, ToolContext, ToolKind, ToolOutput
from tests.tools.support import call, ok


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def area(clock: Clock) -> StagingArea:
    return StagingArea("session-a", clock=clock)


@pytest.fixture
def tools(area: StagingArea) -> dict[str, Tool]:
    return {t.name: t for t in staging_tools(area)}


def token_of(preview: str) -> str:
    match = re.search(r"as token (chg_[0-9a-f]+);", preview)
    assert match, preview
    return match.group(1)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path below ``folder`` with its content (None for folders)."""
    return {
        p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


async def preview_edit(tools: dict[str, Tool], ctx: ToolContext, **arguments: object) -> str:
    return token_of(await ok(tools["preview_edit_file"], ctx, **arguments))


async def test_preview_edit_shows_a_diff_then_apply_writes_atomically(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    target = ctx.cwd / "notes.txt"
    target.write_text("one\ntwo\nthree\n")
    preview = await ok(
        tools["preview_edit_file"], ctx, path="notes.txt", old_string="two", new_string="TWO"
    )
    assert "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n" in (
        preview
    )
    assert "new file" not in preview
    assert target.read_text() == "one\ntwo\nthree\n"
    inode = target.stat().st_ino
    token = token_of(preview)
    applied = await ok(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert applied == f"applied {token}: wrote 14 bytes to notes.txt (replaced)"
    assert target.read_text() == "one\nTWO\nthree\n"
    assert target.stat().st_ino != inode  # renamed into place
    assert [p.name for p in ctx.cwd.iterdir()] == ["notes.txt"]  # no temp file left


async def test_preview_write_of_a_new_file_creates_it_only_on_apply(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    preview = await ok(tools["preview_write_file"], ctx, path="pkg/mod.py", content="x = 1")
    assert "new file\n--- /dev/null\n+++ b/pkg/mod.py\n@@ -0,0 +1 @@\n+x = 1\n" in preview
    assert "\\ No newline at end of file" in preview
    assert not (ctx.cwd / "pkg").exists()
    applied = await ok(tools[APPLY_TOOL_NAME], ctx, token=token_of(preview))
    assert applied.endswith("wrote 5 bytes to pkg/mod.py (created)")
    assert (ctx.cwd / "pkg/mod.py").read_text() == "x = 1"


async def test_previews_change_nothing_on_disk(tools: dict[str, Tool], ctx: ToolContext) -> None:
    (ctx.cwd / "a.txt").write_text("alpha\n")
    (ctx.cwd / "sub").mkdir()
    (ctx.cwd / "sub/b.txt").write_bytes(b"beta\r\n")
    before = snapshot(ctx.cwd)
    await ok(tools["preview_write_file"], ctx, path="a.txt", content="new\n")
    await ok(tools["preview_write_file"], ctx, path="deep/er/c.txt", content="c")
    await ok(tools["preview_edit_file"], ctx, path="sub/b.txt", old_string="beta", new_string="b")
    assert snapshot(ctx.cwd) == before


async def test_previews_are_read_only_edits_and_apply_is_not(tools: dict[str, Tool]) -> None:
    caps = {name: t.capabilities for name, t in tools.items()}
    assert list(caps) == ["preview_write_file", "preview_edit_file", APPLY_TOOL_NAME]
    assert caps["preview_write_file"].read_only and caps["preview_edit_file"].read_only
    assert not caps[APPLY_TOOL_NAME].read_only
    assert {c.kind for c in caps.values()} == {ToolKind.EDIT}
    assert set(tools[APPLY_TOOL_NAME].parameters["properties"]) == {"token"}


async def test_apply_refuses_a_stale_file(tools: dict[str, Tool], ctx: ToolContext) -> None:
    target = ctx.cwd / "f.txt"
    target.write_text("v1\n")
    token = await preview_edit(tools, ctx, path="f.txt", old_string="v1", new_string="v2")
    target.write_text("v1 edited by someone else\n")
    with pytest.raises(ToolError, match=r"f\.txt changed since the preview"):
        await call(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert target.read_text() == "v1 edited by someone else\n"


async def test_apply_refuses_a_file_created_or_deleted_since_the_preview(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    created = token_of(await ok(tools["preview_write_file"], ctx, path="new.txt", content="x"))
    (ctx.cwd / "new.txt").write_text("someone else's")
    (ctx.cwd / "gone.txt").write_text("old\n")
    deleted = await preview_edit(tools, ctx, path="gone.txt", old_string="old", new_string="new")
    (ctx.cwd / "gone.txt").unlink()
    for token in (created, deleted):
        with pytest.raises(ToolError, match="changed since the preview"):
            await call(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert (ctx.cwd / "new.txt").read_text() == "someone else's"
    assert not (ctx.cwd / "gone.txt").exists()


async def test_a_second_change_of_the_same_file_goes_stale(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    (ctx.cwd / "f.txt").write_text("a b\n")
    first = await preview_edit(tools, ctx, path="f.txt", old_string="a", new_string="A")
    second = await preview_edit(tools, ctx, path="f.txt", old_string="b", new_string="B")
    await ok(tools[APPLY_TOOL_NAME], ctx, token=first)
    with pytest.raises(ToolError, match="changed since the preview"):
        await call(tools[APPLY_TOOL_NAME], ctx, token=second)
    assert (ctx.cwd / "f.txt").read_text() == "A b\n"


async def test_tokens_expire_after_ten_minutes(
    area: StagingArea, tools: dict[str, Tool], ctx: ToolContext, clock: Clock
) -> None:
    fresh = token_of(await ok(tools["preview_write_file"], ctx, path="a.txt", content="a"))
    old = token_of(await ok(tools["preview_write_file"], ctx, path="b.txt", content="b"))
    clock.now += TOKEN_TTL
    assert area.is_valid(old)  # exactly at the limit it still counts
    clock.now += 1
    assert not area.is_valid(old)
    with pytest.raises(ToolError, match=r"expired \(tokens last 10 minutes\)"):
        await call(tools[APPLY_TOOL_NAME], ctx, token=old)
    assert not (ctx.cwd / "b.txt").exists()
    clock.now -= 1
    await ok(tools[APPLY_TOOL_NAME], ctx, token=fresh)
    assert (ctx.cwd / "a.txt").read_text() == "a"


async def test_unknown_and_used_tokens_are_refused(
    area: StagingArea, tools: dict[str, Tool], ctx: ToolContext
) -> None:
    with pytest.raises(ToolError, match="unknown change token 'chg_0000'"):
        await call(tools[APPLY_TOOL_NAME], ctx, token="chg_0000")
    token = token_of(await ok(tools["preview_write_file"], ctx, path="f.txt", content="1"))
    await ok(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert not area.is_valid(token)
    with pytest.raises(ToolError, match="already applied"):
        await call(tools[APPLY_TOOL_NAME], ctx, token=token)


async def test_a_token_of_another_session_is_refused(
    area: StagingArea, tools: dict[str, Tool], ctx: ToolContext, clock: Clock
) -> None:
    other = {t.name: t for t in staging_tools(StagingArea("session-b", clock=clock))}
    token = token_of(await ok(tools["preview_write_file"], ctx, path="f.txt", content="mine"))
    with pytest.raises(ToolError, match="not issued in this session"):
        await call(other[APPLY_TOOL_NAME], ctx, token=token)
    assert not (ctx.cwd / "f.txt").exists()
    assert area.is_valid(token)  # the refusal elsewhere did not use it up
    staged = area.pending(token)
    assert staged is not None and staged.shown == "f.txt" and staged.content == b"mine"


async def test_the_oldest_change_is_evicted_past_the_limit(
    area: StagingArea, tools: dict[str, Tool], ctx: ToolContext
) -> None:
    tokens = [
        token_of(await ok(tools["preview_write_file"], ctx, path=f"f{i}.txt", content=str(i)))
        for i in range(MAX_STAGED + 1)
    ]
    assert MAX_STAGED == 50
    assert [area.is_valid(t) for t in tokens] == [False] + [True] * MAX_STAGED
    with pytest.raises(ToolError, match="evicted"):
        await call(tools[APPLY_TOOL_NAME], ctx, token=tokens[0])
    await ok(tools[APPLY_TOOL_NAME], ctx, token=tokens[1])
    assert sorted(p.name for p in ctx.cwd.iterdir()) == ["f1.txt"]


async def test_concurrent_applies_of_one_token_succeed_once(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    (ctx.cwd / "f.txt").write_text("count = 1\n")
    token = await preview_edit(tools, ctx, path="f.txt", old_string="1", new_string="2")
    apply = tools[APPLY_TOOL_NAME]
    results = await asyncio.gather(
        call(apply, ctx, token=token), call(apply, ctx, token=token), return_exceptions=True
    )
    assert sorted(type(r).__name__ for r in results) == ["ToolError", "ToolOutput"]
    done = next(r for r in results if isinstance(r, ToolOutput))
    assert done.content.startswith(f"applied {token}")
    assert (ctx.cwd / "f.txt").read_text() == "count = 2\n"


async def test_edit_previews_follow_edit_file_rules(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    (ctx.cwd / "f.txt").write_text("x = 1\nx = 1\n")
    preview = tools["preview_edit_file"]
    with pytest.raises(ToolError, match=r"old_string was not found in f\.txt"):
        await call(preview, ctx, path="f.txt", old_string="y = 1", new_string="y = 2")
    with pytest.raises(ToolError, match=r"old_string occurs 2 times in f\.txt"):
        await call(preview, ctx, path="f.txt", old_string="x = 1", new_string="x = 2")
    with pytest.raises(ToolError, match="old_string is empty"):
        await call(preview, ctx, path="f.txt", old_string="", new_string="x")
    with pytest.raises(ToolError, match="identical"):
        await call(preview, ctx, path="f.txt", old_string="x", new_string="x")
    with pytest.raises(ToolError, match="does not exist"):
        await call(preview, ctx, path="missing.txt", old_string="a", new_string="b")
    token = await preview_edit(
        tools, ctx, path="f.txt", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    await ok(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert (ctx.cwd / "f.txt").read_text() == "x = 2\nx = 2\n"


async def test_edit_preview_keeps_crlf_and_undecodable_bytes(
    tools: dict[str, Tool], ctx: ToolContext
) -> None:
    target = ctx.cwd / "win.txt"
    target.write_bytes(b"caf\xe9\r\nold line\r\nend\r\n")
    token = await preview_edit(
        tools, ctx, path="win.txt", old_string="old line\nend", new_string="new line\nend"
    )
    await ok(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert target.read_bytes() == b"caf\xe9\r\nnew line\r\nend\r\n"


async def test_writing_identical_content_stages_nothing(
    area: StagingArea, tools: dict[str, Tool], ctx: ToolContext
) -> None:
    (ctx.cwd / "same.txt").write_text("same\n")
    text = await ok(tools["preview_write_file"], ctx, path="same.txt", content="same\n")
    assert text == "no change: same.txt already has this content (nothing was staged)"
    assert "chg_" not in text


async def test_previews_stay_inside_the_sandbox(tools: dict[str, Tool], ctx: ToolContext) -> None:
    with pytest.raises(SandboxError):
        await call(tools["preview_write_file"], ctx, path="../escape.txt", content="x")
    (ctx.cwd / "dir").mkdir()
    with pytest.raises(ToolError, match="dir is a directory"):
        await call(tools["preview_write_file"], ctx, path="dir", content="x")


async def test_apply_refuses_a_path_swapped_for_a_symlink(
    tools: dict[str, Tool], ctx: ToolContext, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (ctx.cwd / "sub").mkdir()
    token = token_of(await ok(tools["preview_write_file"], ctx, path="sub/f.txt", content="x"))
    (ctx.cwd / "sub").rmdir()
    (ctx.cwd / "sub").symlink_to(outside)
    with pytest.raises(SandboxError):
        await call(tools[APPLY_TOOL_NAME], ctx, token=token)
    assert list(outside.iterdir()) == []
