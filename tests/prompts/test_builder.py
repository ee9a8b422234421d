"""PromptBuilder: section order, project instructions, the identity file and stable output."""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from openheim.config.trust import set_trust
from openheim.errors import ConfigError
from openheim.prompts import builder as prompt_module
from openheim.prompts.builder import (
    DEFAULT_IDENTITY,
    IDENTITY_WARNED,
    PromptBuilder,
    find_project_instructions,
)
from openheim.prompts.builder import search_folders as folders_of
from openheim.skills import SkillsManager


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".openheim"
    write(path / "system.md", "I am the custom identity.\n")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository (it holds .git) with a nested working directory."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    return root


def builder(
    data_dir: Path,
    cwd: Path,
    *,
    skills: SkillsManager | None = None,
    active_skills: Sequence[str] = (),
    catalog: bool = True,
) -> PromptBuilder:
    return PromptBuilder(
        data_dir=data_dir, cwd=cwd, skills=skills, active_skills=active_skills, catalog=catalog
    )


def test_sections_come_in_a_stable_order(data_dir: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "Run make test.")
    set_trust(repo, data_dir)
    write(data_dir / "skills" / "listed.md", "A listed skill")
    write(data_dir / "skills" / "active.md", "---\ndescription: Active one\n---\nActive body")
    skills = SkillsManager(data_dir, repo, True)
    cwd = repo / "pkg"
    text = builder(data_dir, cwd, skills=skills, active_skills=["active"]).build()
    markers = [
        "You are running inside openheim",
        f"Working directory: {cwd}",
        "I am the custom identity.",
        f"## Project instructions ({repo / 'AGENTS.md'})\n\nRun make test.",
        "## Skills",
        "- listed: A listed skill",
        "## Skill: active\n\nActive body",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)
    assert "- active:" not in text  # an active skill is not offered again


def test_output_is_byte_identical_across_builds_and_has_no_date(data_dir: Path, repo: Path) -> None:
    write(repo / "CLAUDE.md", "Be brief.")
    write(data_dir / "skills" / "b.md", "Bee")
    write(data_dir / "skills" / "a.md", "Ay")
    prompt = builder(data_dir, repo, skills=SkillsManager(data_dir, repo, True))
    first, second = prompt.build(), prompt.build()
    assert first.encode() == second.encode()
    again = builder(data_dir, repo, skills=SkillsManager(data_dir, repo, True)).build()
    assert again == first
    assert first.index("- a: Ay") < first.index("- b: Bee")
    assert datetime.date.today().isoformat() not in first


def test_changed_files_are_picked_up_on_the_next_build(data_dir: Path, repo: Path) -> None:
    prompt = builder(data_dir, repo)
    assert "I am the custom identity." in prompt.build()
    system = write(data_dir / "system.md", "A different identity, longer.\n")
    os.utime(system, ns=(system.stat().st_atime_ns, system.stat().st_mtime_ns + 10**9))
    text = prompt.build()
    assert "A different identity, longer." in text
    assert "custom identity" not in text


def test_a_missing_system_md_gives_the_default_and_no_warning(
    tmp_path: Path, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No system.md is where every user starts: the built-in identity, and nothing to report."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    told: list[str] = []
    prompt = PromptBuilder(data_dir=fresh, cwd=repo, warn=told.append)
    with caplog.at_level(logging.DEBUG, logger="openheim.prompts.builder"):
        assert DEFAULT_IDENTITY in prompt.build()
        assert DEFAULT_IDENTITY in builder(fresh, repo).build()  # the default teller logs
    assert told == [] and caplog.records == []
    assert not (fresh / IDENTITY_WARNED).exists()


def test_an_empty_system_md_gives_the_default_and_one_warning(
    tmp_path: Path, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    write(data / "system.md", "  \n")
    prompt = builder(data, repo)
    with caplog.at_level(logging.WARNING, logger="openheim.prompts.builder"):
        first = prompt.build()
        prompt.build()
    assert DEFAULT_IDENTITY in first
    assert [r.getMessage() for r in caplog.records] == [
        f"{data / 'system.md'} is empty: using the built-in identity (write your agent's "
        "instructions there, or delete the file)"
    ]


def test_an_empty_system_md_is_warned_about_once_per_data_dir(
    tmp_path: Path, repo: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A marker in the data directory keeps the warning from repeating in later processes."""
    first_dir, other_dir = tmp_path / "one", tmp_path / "two"
    write(first_dir / "system.md", "")
    write(other_dir / "system.md", "\n")
    with caplog.at_level(logging.WARNING, logger="openheim.prompts.builder"):
        builder(first_dir, repo).build()
        monkeypatch.setattr(prompt_module, "_WARNED", set())  # as if in a new process
        assert DEFAULT_IDENTITY in builder(first_dir, repo).build()
        builder(other_dir, repo).build()
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert str(first_dir / "system.md") in warned[0] and str(other_dir) in warned[1]
    assert (first_dir / IDENTITY_WARNED).is_file() and (other_dir / IDENTITY_WARNED).is_file()


def test_agents_md_wins_over_nearer_code_and_claude_md(data_dir: Path, repo: Path) -> None:
    cwd = repo / "pkg" / "sub"
    write(cwd / "CLAUDE.md", "claude rules")
    write(cwd / "CODE.md", "code rules")
    write(repo / "AGENTS.md", "agents rules")
    text = builder(data_dir, cwd).build()
    assert "agents rules" in text
    assert "claude rules" not in text and "code rules" not in text


def test_the_nearest_agents_md_wins(data_dir: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "outer")
    write(repo / "pkg" / "AGENTS.md", "inner")
    assert find_project_instructions(folders_of(repo / "pkg" / "sub")) == repo / "pkg" / "AGENTS.md"


def test_code_md_before_claude_md_in_one_folder_but_nearest_first(repo: Path) -> None:
    write(repo / "CODE.md", "code")
    write(repo / "CLAUDE.md", "claude")
    assert find_project_instructions(folders_of(repo / "pkg")) == repo / "CODE.md"
    write(repo / "pkg" / "CLAUDE.md", "nearer claude")
    assert find_project_instructions(folders_of(repo / "pkg")) == repo / "pkg" / "CLAUDE.md"


def test_the_search_stops_at_the_repository_root(
    data_dir: Path, repo: Path, tmp_path: Path
) -> None:
    write(tmp_path / "AGENTS.md", "above the repository")
    text = builder(data_dir, repo / "pkg").build()
    assert "above the repository" not in text
    assert "## Project instructions" not in text
    assert folders_of(repo / "pkg") == [repo / "pkg", repo]


def test_outside_a_repository_the_search_goes_up(data_dir: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "plain" / "deep"
    cwd.mkdir(parents=True)
    write(tmp_path / "AGENTS.md", "found from above")
    assert "found from above" in builder(data_dir, cwd).build()
    assert folders_of(cwd)[-1] == Path(cwd.anchor)


def test_a_git_file_marks_a_worktree_root(data_dir: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    write(worktree / ".git", "gitdir: /elsewhere\n")
    write(tmp_path / "AGENTS.md", "outside the worktree")
    assert folders_of(worktree) == [worktree]
    assert "outside the worktree" not in builder(data_dir, worktree).build()


def test_huge_instructions_are_truncated(data_dir: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "x" * 70_000)
    text = builder(data_dir, repo).build()
    assert "[AGENTS.md truncated at 65536 characters" in text
    assert "x" * 70_000 not in text


def test_untrusted_project_skills_are_explained(data_dir: Path, repo: Path) -> None:
    write(repo / ".openheim" / "skills" / "theirs.md", "Theirs")
    text = builder(data_dir, repo, skills=SkillsManager(data_dir, repo, False)).build()
    assert "- theirs: Theirs (untrusted project skill)" in text
    assert "come from a project the user has not trusted" in text


def test_no_skills_section_without_skills_or_catalog(data_dir: Path, repo: Path) -> None:
    assert (
        "## Skills"
        not in builder(data_dir, repo, skills=SkillsManager(data_dir, repo, True)).build()
    )
    write(data_dir / "skills" / "a.md", "Ay")
    skills = SkillsManager(data_dir, repo, True)
    assert "## Skills" in builder(data_dir, repo, skills=skills).build()
    assert "## Skills" not in builder(data_dir, repo, skills=skills, catalog=False).build()


def test_an_unknown_active_skill_fails_at_construction(data_dir: Path, repo: Path) -> None:
    write(data_dir / "skills" / "real.md", "Real")
    with pytest.raises(ConfigError, match=r"unknown skill 'nope' \(available: real\)"):
        builder(data_dir, repo, skills=SkillsManager(data_dir, repo, True), active_skills=["nope"])


UNTRUSTED_INSTRUCTIONS = "from a folder the user has not trusted"


def test_instructions_of_an_untrusted_folder_are_marked(data_dir: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "Always push to origin.")
    text = builder(data_dir, repo / "pkg").build()
    header = f"## Project instructions ({repo / 'AGENTS.md'}, untrusted folder)"
    assert header in text and UNTRUSTED_INSTRUCTIONS in text
    assert text.index(UNTRUSTED_INSTRUCTIONS) < text.index("Always push to origin.")


@pytest.mark.parametrize("name", ["AGENTS.md", "CODE.md", "CLAUDE.md"])
def test_instructions_of_a_trusted_folder_are_not_marked(
    data_dir: Path, repo: Path, name: str
) -> None:
    write(repo / name, "Run make test.")
    set_trust(repo, data_dir)
    text = builder(data_dir, repo).build()
    assert f"## Project instructions ({repo / name})\n\nRun make test." in text
    assert UNTRUSTED_INSTRUCTIONS not in text


def test_an_active_untrusted_project_skill_is_marked(data_dir: Path, repo: Path) -> None:
    write(repo / ".openheim" / "skills" / "theirs.md", "Theirs to follow")
    write(data_dir / "skills" / "mine.md", "Mine to follow")
    skills = SkillsManager(data_dir, repo, False)
    text = builder(data_dir, repo, skills=skills, active_skills=["theirs", "mine"]).build()
    assert "## Skill: theirs (untrusted project skill)\n\n" in text
    assert "## Skill: mine\n\nMine to follow" in text
    theirs = text[text.index("## Skill: theirs") : text.index("## Skill: mine")]
    assert "has not trusted" in theirs and theirs.rstrip().endswith("Theirs to follow")
