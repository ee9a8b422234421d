"""An untrusted project's prompts must be its own real files: a symlink anywhere from the
project root down (``.openheim``, ``.openheim/prompts`` or a prompt file), a hard link or a
file that is not regular is skipped with a notice naming it, so a cloned repository cannot
offer another folder of yours as its prompts. A trusted project's symlinks are followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.prompts.library import PromptLibrary
from tests.prompts.test_library import library, write


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    """A folder of the user's, outside the project, holding a Markdown file."""
    folder = tmp_path / "mine"
    write(folder, "diary", "my private notes")
    return folder


def names(lib: PromptLibrary) -> list[str]:
    return [p.name for p in lib.available()]


def test_a_symlinked_prompts_folder_is_ignored_with_a_notice(
    home: Path, tmp_path: Path, mine: Path
) -> None:
    project = tmp_path / "project"
    (project / ".openheim").mkdir(parents=True)
    (project / ".openheim" / "prompts").symlink_to(mine, target_is_directory=True)
    lib, warnings = library(home, project, trusted=False)
    assert names(lib) == []
    [warning] = warnings
    assert str(project / ".openheim" / "prompts") in warning and "symlink" in warning
    trusted, _ = library(home, project, trusted=True)
    assert names(trusted) == ["diary"]  # the user vouched for the project


def test_a_symlinked_openheim_folder_is_ignored_with_a_notice(
    home: Path, tmp_path: Path, mine: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (mine / "prompts").mkdir()
    write(mine / "prompts", "review", "mine")
    (project / ".openheim").symlink_to(mine, target_is_directory=True)
    lib, warnings = library(home, project, trusted=False)
    assert names(lib) == []
    [warning] = warnings
    assert str(project / ".openheim") in warning and "symlink" in warning


def test_linked_and_odd_prompt_files_are_skipped_each_named(
    home: Path, tmp_path: Path, mine: Path
) -> None:
    folder = tmp_path / "project" / ".openheim" / "prompts"
    write(folder, "ok", "fine")
    (folder / "inside.md").symlink_to(folder / "ok.md")
    os.link(mine / "diary.md", folder / "hard.md")
    os.mkfifo(folder / "pipe.md")
    lib, warnings = library(home, tmp_path / "project", trusted=False)
    assert names(lib) == ["ok"]
    assert len(warnings) == 3
    for name, reason in (
        ("inside.md", "symlink"),
        ("hard.md", "hard link"),
        ("pipe.md", "regular"),
    ):
        assert any(name in w and reason in w for w in warnings), (name, warnings)
    assert not any("my private notes" in w for w in warnings)
    trusted, _ = library(home, tmp_path / "project", trusted=True)
    assert "inside" in names(trusted)
