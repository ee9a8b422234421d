"""A hard link gives a file a second name, which ``deny_read`` cannot see through: the file
tools refuse to read or edit a regular file with more than one name, and ``search`` skips it
(counted), so a secret linked in under an innocent name never reaches the model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.process.child_env import child_env
from openheim.redaction.secrets import SecretPolicy
from openheim.tools.base import ToolContext
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.builtin.search import search
from openheim.tools.sandbox import PathSandbox
from tests.tools.support import call, ok
from tests.tools.test_client_delegation import attach

SECRET = "API_TOKEN=hunter2-very-secret\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    """A work dir beside a folder holding a ``.env`` that ``deny_read`` refuses by name."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (elsewhere / ".env").write_text(SECRET)
    os.link(elsewhere / ".env", work / "notes.txt")
    policy = SecretPolicy([".env", "*.pem"])
    return ToolContext(PathSandbox(work), work.resolve(), child_env(), secret_policy=policy)


async def test_read_file_refuses_a_hard_link_with_a_clear_line(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as err:
        await call(read_file, ctx, path="notes.txt")
    message = str(err.value)
    assert "hunter2" not in message
    assert "notes.txt is a hard link" in message
    assert "\n" not in message.strip()


async def test_edit_file_refuses_a_hard_link_and_changes_nothing(
    ctx: ToolContext, tmp_path: Path
) -> None:
    with pytest.raises(ToolError, match="hard link"):
        await call(edit_file, ctx, path="notes.txt", old_string="hunter2", new_string="x")
    assert (tmp_path / "elsewhere" / ".env").read_text() == SECRET


async def test_search_skips_hard_links_and_says_so(ctx: ToolContext) -> None:
    (ctx.cwd / "plain.txt").write_text("API_TOKEN=placeholder\n")
    found = await ok(search, ctx, pattern="API_TOKEN")
    assert "hunter2" not in found
    assert "plain.txt:1:" in found
    assert "[skipped 1 file with more than one name (hard links); never shown]" in found
    single = await ok(search, ctx, pattern="very-secret", path="notes.txt")
    assert "hunter2" not in single and "hard links" in single


async def test_write_file_replaces_the_link_without_showing_the_old_text(
    ctx: ToolContext, tmp_path: Path
) -> None:
    output = await call(write_file, ctx, path="notes.txt", content="mine\n")
    assert not output.is_error
    assert output.diff is None or "hunter2" not in (output.diff.old_text or "")
    assert (tmp_path / "elsewhere" / ".env").read_text() == SECRET
    assert await ok(read_file, ctx, path="notes.txt") == "mine\n"


async def test_an_editor_is_not_asked_for_a_hard_linked_file(ctx: ToolContext) -> None:
    client = attach(ctx)
    client.files[ctx.cwd / "notes.txt"] = SECRET  # what the editor would read from disk
    with pytest.raises(ToolError, match="hard link"):
        await call(read_file, ctx, path="notes.txt")
    with pytest.raises(ToolError, match="hard link"):
        await call(edit_file, ctx, path="notes.txt", old_string="hunter2", new_string="x")
    assert client.calls == []
    client.files[ctx.cwd / "unsaved.txt"] = "only in the editor\n"  # no file on disk: asked
    assert await ok(read_file, ctx, path="unsaved.txt") == "only in the editor\n"


async def test_an_editor_is_not_asked_to_write_over_a_hard_linked_file(
    ctx: ToolContext, tmp_path: Path
) -> None:
    client = attach(ctx)  # an editor may write in place, through the link, to the other name
    with pytest.raises(ToolError, match="hard link"):
        await call(write_file, ctx, path="notes.txt", content="mine\n")
    assert client.calls == []
    assert (tmp_path / "elsewhere" / ".env").read_text() == SECRET
    await call(write_file, ctx, path="fresh.txt", content="new\n")  # no file there: asked
    assert client.calls == [("write", ctx.cwd / "fresh.txt", "new\n")]
