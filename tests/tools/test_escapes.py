"""Sandbox escape attempts through the file tools, one row each in ``ESCAPES``.

The work dir holds symlinks planted to lead out (``out``, ``secret-link``, ``rel-out``, a chain
``hop1 -> hop2``, a loop) and a hard link ``notes.txt`` to the outside file, whose text and name
appear nowhere inside. Each row names a tool and its arguments and whether the call must be
refused; either way its output must show nothing from outside and the outside folder must not
change.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openheim.errors import ToolError
from openheim.process.child_env import child_env
from openheim.safety.staging import StagingArea, staging_tools
from openheim.tools.base import Tool, ToolContext
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.builtin.listing import glob, list_dir
from openheim.tools.builtin.search import search
from openheim.tools.sandbox import PathSandbox
from tests.tools.support import call

SECRET = "top secret OUTSIDE\n"
OUTSIDE_NAME = "outside-only.txt"
STAGING = {t.name: t for t in staging_tools(StagingArea("escapes"))}

OUT = "{outside}"
"""Stands for the outside folder's absolute path in a row's arguments."""

ESCAPES: list[tuple[Tool, dict[str, Any], bool]] = [
    (read_file, {"path": "../outside/outside-only.txt"}, True),
    (read_file, {"path": f"{OUT}/outside-only.txt"}, True),
    (read_file, {"path": f"/proc/self/root{OUT}/outside-only.txt"}, True),
    (read_file, {"path": "out/outside-only.txt"}, True),
    (read_file, {"path": "secret-link"}, True),
    (read_file, {"path": "rel-out/outside-only.txt"}, True),
    (read_file, {"path": "hop1/outside-only.txt"}, True),
    (read_file, {"path": "sub/up/../out/outside-only.txt"}, True),
    (read_file, {"path": "loop/x"}, True),
    (read_file, {"path": "notes.txt"}, True),
    (edit_file, {"path": "notes.txt", "old_string": "top", "new_string": "x"}, True),
    (write_file, {"path": "notes.txt", "content": "x"}, False),
    (search, {"pattern": "secret", "path": "notes.txt"}, False),
    (write_file, {"path": "out/new.txt", "content": "x"}, True),
    (write_file, {"path": "out/deep/new.txt", "content": "x"}, True),
    (write_file, {"path": "secret-link", "content": "x"}, True),
    (write_file, {"path": "hop1/outside-only.txt", "content": "x"}, True),
    (write_file, {"path": f"{OUT}/new.txt", "content": "x"}, True),
    (edit_file, {"path": "out/outside-only.txt", "old_string": "top", "new_string": "x"}, True),
    (edit_file, {"path": "secret-link", "old_string": "top", "new_string": "x"}, True),
    (list_dir, {"path": "out"}, True),
    (list_dir, {"path": "rel-out"}, True),
    (list_dir, {"path": ".."}, True),
    (glob, {"pattern": "**", "path": "out"}, True),
    (glob, {"pattern": "**/*.txt"}, False),
    (glob, {"pattern": "out/**"}, False),
    (search, {"pattern": "secret", "path": "out"}, True),
    (search, {"pattern": "secret", "path": "secret-link"}, True),
    (search, {"pattern": "secret"}, False),
    (STAGING["preview_write_file"], {"path": "out/new.txt", "content": "x"}, True),
    (STAGING["preview_write_file"], {"path": "secret-link", "content": "x"}, True),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / OUTSIDE_NAME).write_text(SECRET)
    return place.resolve()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    """A context whose work dir ``tmp_path/work`` sits beside ``tmp_path/outside``."""
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext(PathSandbox(work), work.resolve(), child_env())


@pytest.fixture
def planted(ctx: ToolContext, outside: Path) -> Path:
    """The work dir, with its symlinks planted."""
    work = ctx.cwd
    (work / "sub").mkdir()
    (work / "sub" / "up").symlink_to("..")
    (work / "out").symlink_to(outside, target_is_directory=True)
    (work / "secret-link").symlink_to(outside / OUTSIDE_NAME)
    (work / "rel-out").symlink_to(Path("..") / outside.name)
    (work / "hop2").symlink_to(outside)
    (work / "hop1").symlink_to("hop2")
    (work / "loop").symlink_to("loop")
    os.link(outside / OUTSIDE_NAME, work / "notes.txt")
    return work


def _fill(value: Any, outside: Path) -> Any:
    return value.replace(OUT, str(outside)) if isinstance(value, str) else value


@pytest.mark.parametrize(
    ("tool", "arguments", "refused"),
    ESCAPES,
    ids=[f"{t.name}-{a.get('path', '')}-{a.get('pattern', '')}" for t, a, _ in ESCAPES],
)
async def test_escape_attempt(
    tool: Tool, arguments: dict[str, Any], refused: bool, planted: Path, ctx: ToolContext
) -> None:
    outside = planted.parent / "outside"
    args = {k: _fill(v, outside) for k, v in arguments.items()}
    try:
        output = await call(tool, ctx, **args)
    except ToolError:
        text, was_refused = "", True
    else:
        diff = output.diff
        text = output.content + ("" if diff is None else f"{diff.old_text}{diff.new_text}")
        was_refused = output.is_error
    assert "OUTSIDE" not in text and OUTSIDE_NAME not in text, text
    assert was_refused == refused, text
    assert sorted(p.name for p in outside.iterdir()) == [OUTSIDE_NAME]
    assert (outside / OUTSIDE_NAME).read_text() == SECRET
