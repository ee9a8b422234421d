"""An untrusted project's skills are its own real files: no symlink, hard link or FIFO."""

from __future__ import annotations

import os
from pathlib import Path

from openheim.skills import SkillsManager
from openheim.skills.untrusted import MAX_BYTES
from tests.skills.conftest import Layout, write


def listed(layout: Layout, trusted: bool) -> tuple[list[str], list[str]]:
    """(names of the skills offered, warnings given) for the project at ``trusted``."""
    warnings: list[str] = []
    manager = SkillsManager(layout.data_dir, layout.project, trusted, warn=warnings.append)
    return [info.name for info in manager.available()], warnings


def test_a_symlink_inside_an_untrusted_skills_folder_is_skipped(layout: Layout) -> None:
    real = layout.project_skill("real.md", "Real")
    (real.parent / "alias.md").symlink_to(real)
    names, warnings = listed(layout, trusted=False)
    assert names == ["real"]
    assert any("alias.md" in w and "symlink" in w and "openheim trust" in w for w in warnings)
    assert listed(layout, trusted=True)[0] == ["alias", "real"]


def test_a_hard_link_to_a_file_outside_is_not_a_skill(layout: Layout) -> None:
    secret = write(layout.root / "home" / "notes.md", "SECRET")
    folder = layout.project / ".openheim" / "skills"
    folder.mkdir(parents=True)
    os.link(secret, folder / "notes.md")
    names, warnings = listed(layout, trusted=False)
    assert names == []
    assert any("hard link (2 names)" in w for w in warnings)
    layout.agents_skill("agent", "body")
    os.link(secret, layout.project / ".agents" / "skills" / "linked.md")
    assert listed(layout, trusted=False)[0] == ["agent"]


def test_a_hard_linked_skill_md_is_skipped(layout: Layout) -> None:
    secret = write(layout.root / "secret.txt", "---\nname: leak\n---\nSECRET")
    (layout.project / ".agents" / "skills" / "leak").mkdir(parents=True)
    os.link(secret, layout.project / ".agents" / "skills" / "leak" / "SKILL.md")
    names, warnings = listed(layout, trusted=False)
    assert names == []
    assert any("SKILL.md" in w and "hard link" in w for w in warnings)


def test_a_symlinked_folder_on_the_way_is_refused(layout: Layout) -> None:
    elsewhere = layout.project / "docs" / "skills"
    write(elsewhere / "inside.md", "inside the project, but through a link")
    (layout.project / ".openheim").mkdir()
    (layout.project / ".openheim" / "skills").symlink_to(elsewhere)
    names, warnings = listed(layout, trusted=False)
    assert names == []
    assert any("skills is a symlink" in w for w in warnings)
    assert listed(layout, trusted=True)[0] == ["inside"]


def test_a_symlinked_agent_skill_folder_is_skipped(layout: Layout) -> None:
    target = layout.project / "vendor" / "tool"
    write(target / "SKILL.md", "---\nname: tool\n---\nbody")
    layout.agents_skill("own", "---\nname: own\n---\nbody")
    (layout.project / ".agents" / "skills" / "tool").symlink_to(target)
    names, warnings = listed(layout, trusted=False)
    assert names == ["own"]
    assert any("tool is a symlink" in w for w in warnings)


def test_a_fifo_or_an_oversized_file_is_skipped_without_blocking(layout: Layout) -> None:
    folder = layout.project / ".openheim" / "skills"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.md")
    write(folder / "huge.md", "x" * (MAX_BYTES + 1))
    write(folder / "fine.md", "Fine")
    names, warnings = listed(layout, trusted=False)
    assert names == ["fine"]
    assert any("pipe.md" in w and "not a regular file" in w for w in warnings)
    assert any("huge.md" in w and "larger than" in w for w in warnings)


def test_untrusted_skills_load_their_body_and_a_later_edit_shows(layout: Layout) -> None:
    path = layout.project_skill("theirs.md", '+++\ndescription = "Theirs"\n+++\nFirst')
    manager = SkillsManager(layout.data_dir, layout.project, False)
    assert manager.load("theirs").body == "First"
    path.write_text("Second", encoding="utf-8")
    skill = manager.load("theirs")
    assert (skill.body, skill.path, skill.trusted) == ("Second", path, False)


def test_no_project_folders_means_no_untrusted_skills(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    manager = SkillsManager(tmp_path / "data", tmp_path / "project", False)
    assert manager.available() == []
