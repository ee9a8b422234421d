"""An editor (ACP ``fs/*``) opens a path by name itself, following links and writing in place.
openheim lets it open only what is nothing yet or a regular file with one name, checked on a
descriptor opened with ``O_NOFOLLOW``: once before the turn's checkpoint, again just before the
request, and once more after the editor answered. A hard link or a symlink swapped in before
the request is refused; one swapped in while the editor works is reported, never shown."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.process.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.client_io import ClientIO, CommandResult
from openheim.tools.sandbox import PathSandbox
from tests.tools.support import call, ok

SECRET = "API_TOKEN=hunter2-very-secret\n"
Swap = Callable[[], None]


@dataclass
class DiskEditor:
    """An editor that reads and writes the disk by name, in place, through any link;
    ``meanwhile`` runs inside its request, just before it opens the path."""

    meanwhile: Swap | None = None
    calls: list[tuple[str, Path]] = field(default_factory=list)
    reads_files: bool = True
    writes_files: bool = True
    runs_commands: bool = False

    def _open(self, action: str, path: Path) -> None:
        self.calls.append((action, path))
        if self.meanwhile is not None:
            self.meanwhile()
        if path.exists() and not path.is_file():
            raise ToolError(f"the editor would block on {path.name}", hint="none")

    async def read_text_file(self, path: Path) -> str:
        self._open("read", path)
        return path.read_text()

    async def write_text_file(self, path: Path, content: str) -> None:
        self._open("write", path)
        with path.open("r+" if path.exists() else "w") as fh:  # in place, as editors may
            fh.write(content)
            fh.truncate()

    async def run_command(
        self, command: str, *, cwd: Path, env: Mapping[str, str], time_limit: float, call_id: str
    ) -> CommandResult:
        raise AssertionError("not offered")


@dataclass
class SwapBeforeWrite:
    """A ``FileWatch`` whose ``before_write`` (after the tool's first check, before the editor
    is asked) lets another process swap the file."""

    swap: Swap

    async def before_write(self, path: Path) -> None:
        self.swap()

    async def written(self, path: Path) -> None:
        return None


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    (tmp_path / "elsewhere").mkdir()
    path = tmp_path / "elsewhere" / ".env"
    path.write_text(SECRET)
    return path


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("a = 1\n")
    return ToolContext(PathSandbox(work), work.resolve(), child_env(), secret_policy=None)


def editor(ctx: ToolContext, meanwhile: Swap | None = None) -> DiskEditor:
    made = DiskEditor(meanwhile)
    as_protocol: ClientIO = made
    ctx.client = as_protocol
    return made


def hard_link(path: Path, other: Path) -> Swap:
    """Make ``path`` another name of ``other``, atomically."""

    def swap() -> None:
        os.link(other, path.with_name(".swap"))
        os.replace(path.with_name(".swap"), path)

    return swap


def symlink(path: Path, other: Path) -> Swap:
    def swap() -> None:
        path.with_name(".swap").symlink_to(other)
        os.replace(path.with_name(".swap"), path)

    return swap


def refusal(err: pytest.ExceptionInfo[ToolError]) -> str:
    message = str(err.value)
    assert "\n" not in message and "hunter2" not in message
    return message


@pytest.mark.parametrize("make_swap", [hard_link, symlink])
async def test_a_link_swapped_in_before_the_write_request_is_refused(
    ctx: ToolContext, secret: Path, make_swap: Callable[[Path, Path], Swap]
) -> None:
    client = editor(ctx)
    ctx.watch = SwapBeforeWrite(make_swap(ctx.cwd / "notes.txt", secret))
    with pytest.raises(ToolError) as err:
        await call(write_file, ctx, path="notes.txt", content="mine\n")
    assert "notes.txt is a " in refusal(err)
    assert client.calls == [] and secret.read_text() == SECRET


async def test_an_edit_is_refused_when_a_hard_link_is_swapped_in_before_its_write(
    ctx: ToolContext, secret: Path
) -> None:
    client = editor(ctx)
    ctx.watch = SwapBeforeWrite(hard_link(ctx.cwd / "notes.txt", secret))
    with pytest.raises(ToolError) as err:
        await call(edit_file, ctx, path="notes.txt", old_string="1", new_string="2")
    assert "notes.txt is a hard link" in refusal(err)
    assert client.calls == [("read", ctx.cwd / "notes.txt")]
    assert secret.read_text() == SECRET


@pytest.mark.parametrize("make_swap", [hard_link, symlink])
async def test_a_link_swapped_in_while_the_editor_writes_is_reported(
    ctx: ToolContext, secret: Path, make_swap: Callable[[Path, Path], Swap]
) -> None:
    # beyond reach: the editor's own open follows the link; the check after it tells
    editor(ctx, meanwhile=make_swap(ctx.cwd / "notes.txt", secret))
    with pytest.raises(ToolError) as err:
        await call(write_file, ctx, path="notes.txt", content="mine\n")
    message = refusal(err)
    assert "notes.txt is a " in message and "after the editor wrote it" in message
    assert "may have written through it" in message


async def test_a_hard_link_swapped_in_while_the_editor_reads_is_never_shown(
    ctx: ToolContext, secret: Path
) -> None:
    editor(ctx, meanwhile=hard_link(ctx.cwd / "notes.txt", secret))
    with pytest.raises(ToolError) as err:
        await call(read_file, ctx, path="notes.txt")
    assert "notes.txt is a hard link (2 names) after the editor read it" in refusal(err)
    with pytest.raises(ToolError) as err:  # edit_file reads it the same way
        await call(edit_file, ctx, path="notes.txt", old_string="hunter2", new_string="x")
    assert "hard link" in refusal(err)
    assert secret.read_text() == SECRET


async def test_only_a_plain_file_or_nothing_is_handed_to_the_editor(ctx: ToolContext) -> None:
    os.mkfifo(ctx.cwd / "pipe")
    client = editor(ctx)
    for tool, arguments in [
        (read_file, {}),
        (write_file, {"content": "x"}),
        (edit_file, {"old_string": "a", "new_string": "b"}),
    ]:
        with pytest.raises(ToolError, match=r"pipe is not a regular file"):
            await call(tool, ctx, path="pipe", **arguments)
    assert client.calls == []
    assert await ok(write_file, ctx, path="new.txt", content="n\n")  # nothing there: asked
    assert await ok(edit_file, ctx, path="notes.txt", old_string="1", new_string="2")
    assert (ctx.cwd / "notes.txt").read_text() == "a = 2\n"
    assert [action for action, _ in client.calls] == ["write", "read", "write"]
