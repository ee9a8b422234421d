"""skills_for(settings): which project supplies skills, and whether it is trusted."""

from __future__ import annotations

from pathlib import Path

from openheim.config.load import Settings, load_settings
from openheim.config.trust import set_trust
from openheim.skills import SkillSource, find_repo_root, skills_for
from tests.skills.conftest import write


def load(tmp_path: Path, cwd: Path) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load_settings(cwd=cwd, env={"OPENHEIM_HOME": str(home)})


def test_the_repository_supplies_agent_skills_without_an_openheim_config(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / ".agents" / "skills" / "lint" / "SKILL.md", "---\ndescription: Lint\n---\nb")
    cwd = repo / "src"
    cwd.mkdir()
    settings = load(tmp_path, cwd)
    assert settings.project_root is None
    assert find_repo_root(cwd) == repo.resolve()
    [info] = skills_for(settings).available()
    assert (info.name, info.source, info.trusted) == ("lint", SkillSource.AGENTS, False)


def test_a_configured_project_is_trusted_once_the_user_trusts_it(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / ".openheim" / "config.toml", "")
    write(project / ".openheim" / "skills" / "deploy.md", "Deploy steps")
    settings = load(tmp_path, project)
    assert [i.trusted for i in skills_for(settings).available()] == [False]
    set_trust(project, settings.data_dir)
    assert [i.summary() for i in skills_for(settings).available()] == ["deploy: Deploy steps"]


def test_outside_any_project_only_user_skills_count(tmp_path: Path) -> None:
    cwd = tmp_path / "loose"
    cwd.mkdir()
    write(cwd / ".agents" / "skills" / "x" / "SKILL.md", "not a project")
    settings = load(tmp_path, cwd)
    write(settings.data_dir / "skills" / "mine.md", "Mine")
    assert find_repo_root(cwd) is None
    assert [i.name for i in skills_for(settings).available()] == ["mine"]
