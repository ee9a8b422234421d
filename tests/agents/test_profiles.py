"""Subagent profiles: frontmatter formats, sources, trust, names and malformed files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.agents import AgentProfile, ProfileSource, load_profiles


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".openheim"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user(data_dir: Path, name: str, text: str) -> Path:
    return write(data_dir / "agents" / name, text)


def project_file(project: Path, name: str, text: str) -> Path:
    return write(project / ".openheim" / "agents" / name, text)


TOML_PROFILE = """+++
description = "Reviews diffs."
model = "claude-haiku-4-5"
provider = "anthropic"
tools = ["read_file", "search_*"]
max_iterations = 6
+++
You are a meticulous code reviewer.
"""


def test_toml_frontmatter_sets_every_field(data_dir: Path) -> None:
    path = user(data_dir, "code-reviewer.md", TOML_PROFILE)
    profiles, warnings = load_profiles(data_dir, None, True)
    assert warnings == []
    assert profiles == {
        "code-reviewer": AgentProfile(
            name="code-reviewer",
            description="Reviews diffs.",
            model="claude-haiku-4-5",
            provider="anthropic",
            tools=("read_file", "search_*"),
            max_iterations=6,
            system_prompt="You are a meticulous code reviewer.",
            path=path.resolve(),
            source=ProfileSource.USER,
        )
    }


def test_yaml_frontmatter_parses_lists_and_numbers_given_as_text(data_dir: Path) -> None:
    text = (
        "---\ndescription: Checks facts\nmodel: small\n"
        "tools: [read_file, 'web_*']\nmax_iterations: 4\n---\nYou check facts.\n"
    )
    user(data_dir, "fact-checker.md", text)
    profiles, warnings = load_profiles(data_dir, None, True)
    profile = profiles["fact-checker"]
    assert warnings == []
    assert (profile.description, profile.model, profile.provider) == ("Checks facts", "small", None)
    assert (profile.tools, profile.max_iterations) == (("read_file", "web_*"), 4)
    assert profile.system_prompt == "You check facts."


def test_a_file_without_frontmatter_is_all_system_prompt(data_dir: Path) -> None:
    user(data_dir, "plain.md", "You are terse.\n\nAnswer in one line.\n")
    profile = load_profiles(data_dir, None, True)[0]["plain"]
    assert profile.description == ""
    assert profile.system_prompt == "You are terse.\n\nAnswer in one line."
    assert (profile.model, profile.tools, profile.max_iterations) == (None, None, None)


def test_a_malformed_frontmatter_skips_only_that_profile(data_dir: Path) -> None:
    bad = user(data_dir, "broken.md", '+++\ndescription = "unterminated\n+++\nbody\n')
    user(data_dir, "good.md", "fine")
    profiles, [warning] = load_profiles(data_dir, None, True)
    assert list(profiles) == ["good"]
    assert str(bad) in warning
    assert "invalid TOML frontmatter" in warning


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("tools = 'read_file'\nmax_iterations = 'x'", "max_iterations must be a positive integer"),
        ("tools = [1, 2]", "tools must be a list"),
        ("max_iterations = 0", "max_iterations must be a positive integer"),
        ("model = 3", "model must be a string"),
    ],
)
def test_a_field_of_the_wrong_type_skips_the_profile(
    data_dir: Path, frontmatter: str, problem: str
) -> None:
    user(data_dir, "odd.md", f"+++\n{frontmatter}\n+++\nbody")
    profiles, [warning] = load_profiles(data_dir, None, True)
    assert profiles == {}
    assert problem in warning


def test_unknown_fields_and_a_provider_without_model_only_warn(data_dir: Path) -> None:
    user(data_dir, "r.md", '+++\ncolour = "red"\nprovider = "openai"\n+++\nbody')
    profiles, warnings = load_profiles(data_dir, None, True)
    assert profiles["r"].provider is None
    assert len(warnings) == 2
    assert "unknown field(s) colour" in warnings[0]
    assert "ignored provider 'openai': it needs model" in warnings[1]


def test_a_trusted_project_profile_wins_a_name_clash(data_dir: Path, project: Path) -> None:
    user(data_dir, "reviewer.md", "user persona")
    project_file(project, "reviewer.md", '+++\nmodel = "m"\n+++\nproject persona')
    profiles, warnings = load_profiles(data_dir, project, True)
    assert warnings == []
    assert profiles["reviewer"].system_prompt == "project persona"
    assert (profiles["reviewer"].source, profiles["reviewer"].model) == (ProfileSource.PROJECT, "m")


def test_an_untrusted_project_cannot_replace_a_user_profile(data_dir: Path, project: Path) -> None:
    user(data_dir, "reviewer.md", "user persona")
    project_file(project, "reviewer.md", "project persona")
    profiles, [warning] = load_profiles(data_dir, project, False)
    assert profiles["reviewer"].system_prompt == "user persona"
    assert "not trusted" in warning


def test_an_untrusted_project_profile_loses_its_model_and_limit_but_keeps_its_tools(
    data_dir: Path, project: Path
) -> None:
    project_file(project, "helper.md", TOML_PROFILE)
    profiles, [warning] = load_profiles(data_dir, project, False)
    helper = profiles["helper"]
    assert (helper.model, helper.provider, helper.max_iterations) == (None, None, None)
    assert helper.tools == ("read_file", "search_*")
    assert "ignored model 'claude-haiku-4-5' and max_iterations 6" in warning


def test_an_untrusted_main_profile_cannot_raise_max_iterations(
    data_dir: Path, project: Path
) -> None:
    """Run with ``--agent``, a project profile asking for 500 model calls gets the user's cap."""
    project_file(project, "long.md", "+++\nmax_iterations = 500\n+++\nKeep going.")
    profiles, [warning] = load_profiles(data_dir, project, False)
    assert profiles["long"].max_iterations is None
    assert "ignored max_iterations 500" in warning
    trusted, _ = load_profiles(data_dir, project, True)
    assert trusted["long"].max_iterations == 500


@pytest.mark.parametrize(
    ("file_name", "problem"),
    [("bad name.md", "contains whitespace"), ("a..b.md", "contains '..'")],
)
def test_invalid_names_are_refused(data_dir: Path, file_name: str, problem: str) -> None:
    user(data_dir, file_name, "persona")
    profiles, [warning] = load_profiles(data_dir, None, True)
    assert profiles == {}
    assert problem in warning


def test_dot_files_and_other_extensions_are_ignored(data_dir: Path) -> None:
    user(data_dir, ".hidden.md", "x")
    user(data_dir, "notes.txt", "x")
    assert load_profiles(data_dir, None, True) == ({}, [])


def test_a_symlink_leading_out_of_the_folder_is_refused(data_dir: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere.md", "borrowed persona")
    (data_dir / "agents").mkdir()
    (data_dir / "agents" / "sneaky.md").symlink_to(outside)
    profiles, [warning] = load_profiles(data_dir, None, True)
    assert profiles == {}
    assert "symlink leading out of the folder" in warning


def test_a_project_agents_folder_resolving_outside_the_project_is_refused(
    data_dir: Path, project: Path, tmp_path: Path
) -> None:
    write(tmp_path / "outside" / "x.md", "persona")
    (project / ".openheim").mkdir()
    (project / ".openheim" / "agents").symlink_to(tmp_path / "outside")
    profiles, [warning] = load_profiles(data_dir, project, True)
    assert profiles == {}
    assert "resolves outside the project" in warning


def test_missing_folders_give_no_profiles_and_no_warnings(data_dir: Path, project: Path) -> None:
    assert load_profiles(data_dir, project, True) == ({}, [])


def test_an_untrusted_project_offers_only_its_own_real_profile_files(
    data_dir: Path, project: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "notes.md", "private notes")
    own = project_file(project, "own.md", '+++\ndescription = "Own"\n+++\nBe brief.')
    os.link(secret, own.parent / "linked.md")
    (own.parent / "alias.md").symlink_to(own)
    os.mkfifo(own.parent / "pipe.md")
    profiles, warnings = load_profiles(data_dir, project, False)
    assert list(profiles) == ["own"]
    assert profiles["own"].system_prompt == "Be brief."
    assert any("linked.md" in w and "hard link (2 names)" in w for w in warnings)
    assert any("alias.md" in w and "symlink" in w for w in warnings)
    assert any("pipe.md" in w and "not a regular file" in w for w in warnings)
    trusted, _ = load_profiles(data_dir, project, True)
    assert sorted(trusted) == ["alias", "linked", "own"]


def test_an_untrusted_projects_symlinked_agents_folder_is_refused(
    data_dir: Path, project: Path
) -> None:
    write(project / "elsewhere" / "x.md", "persona")
    (project / ".openheim").mkdir()
    (project / ".openheim" / "agents").symlink_to(project / "elsewhere")
    profiles, [warning] = load_profiles(data_dir, project, False)
    assert profiles == {}
    assert "agents is a symlink" in warning and "openheim trust" in warning
    assert list(load_profiles(data_dir, project, True)[0]) == ["x"]
