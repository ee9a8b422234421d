"""SkillsManager: sources, precedence, descriptions, names and containment."""

from __future__ import annotations

import logging
import os

import pytest

from openheim.errors import ConfigError
from openheim.skills import SkillsManager, SkillSource
from tests.skills.conftest import Layout, write


def manager(layout: Layout, *, trusted: bool = True) -> SkillsManager:
    return SkillsManager(layout.data_dir, layout.project, trusted)


def test_user_skill_is_named_by_its_file_stem(layout: Layout) -> None:
    path = layout.user("rust.md", "# Rust style\n\nRun clippy before committing.\n")
    [info] = manager(layout).available()
    assert (info.name, info.description, info.source) == ("rust", "Rust style", SkillSource.USER)
    assert info.path == path.resolve()
    skill = manager(layout).load("rust")
    assert skill.body == "# Rust style\n\nRun clippy before committing."


def test_project_skill(layout: Layout) -> None:
    layout.project_skill("review.md", "Review diffs for security issues.\nMore.")
    [info] = manager(layout).available()
    assert (info.name, info.source) == ("review", SkillSource.PROJECT)
    assert info.description == "Review diffs for security issues."


def test_agent_skills_folder_uses_its_frontmatter(layout: Layout) -> None:
    layout.agents_skill(
        "pdf-folder", '---\nname: pdf\ndescription: "Fill in PDF forms"\n---\nUse scripts/fill.py\n'
    )
    [info] = manager(layout).available()
    assert (info.name, info.description, info.source) == (
        "pdf",
        "Fill in PDF forms",
        SkillSource.AGENTS,
    )
    assert manager(layout).load("pdf").body == "Use scripts/fill.py"


def test_agent_skill_without_a_name_takes_its_folder_name(layout: Layout) -> None:
    layout.agents_skill("charts", "---\ndescription: Draw charts\n---\nbody")
    assert [i.name for i in manager(layout).available()] == ["charts"]


def test_folders_without_skill_md_and_other_files_are_ignored(layout: Layout) -> None:
    (layout.project / ".agents" / "skills" / "empty").mkdir(parents=True)
    layout.user("notes.txt", "not a skill")
    layout.user(".draft.md", "hidden editor file")
    layout.user("real.md", "A real skill")
    assert [i.name for i in manager(layout).available()] == ["real"]


def test_later_sources_win_a_name_clash(layout: Layout) -> None:
    layout.user("x.md", "from user")
    assert manager(layout).load("x").body == "from user"
    layout.project_skill("x.md", "from project")
    assert manager(layout).load("x").body == "from project"
    layout.agents_skill("x", "---\ndescription: from agents\n---\nagents body")
    skill = manager(layout).load("x")
    assert (skill.body, skill.source) == ("agents body", SkillSource.AGENTS)
    assert len(manager(layout).available()) == 1


def test_without_a_project_only_user_skills_are_found(layout: Layout) -> None:
    layout.user("mine.md", "mine")
    layout.project_skill("theirs.md", "theirs")
    names = [i.name for i in SkillsManager(layout.data_dir, None, True).available()]
    assert names == ["mine"]


def test_a_project_at_the_data_dir_parent_is_not_a_second_user_source(layout: Layout) -> None:
    layout.user("mine.md", "mine")
    home = layout.data_dir.parent
    [info] = SkillsManager(layout.data_dir, home, False).available()
    assert (info.source, info.trusted) == (SkillSource.USER, True)


def test_descriptions_from_toml_yaml_and_first_line(layout: Layout) -> None:
    layout.user("a.md", '+++\ndescription = "From TOML"\n+++\n# Heading\nbody')
    layout.user("b.md", "---\ndescription: 'From YAML'\n---\nbody")
    layout.user("c.md", "\n\n  ### Deploying the app ##  \n\ntext")
    layout.user("d.md", "---\ndescription: >\n  folded\n  lines\n---\nbody")
    layout.user("e.md", "")
    layout.user("f.md", "# Learn C#\n")
    found = {i.name: i.description for i in manager(layout).available()}
    assert found == {
        "a": "From TOML",
        "b": "From YAML",
        "c": "Deploying the app",
        "d": "folded lines",
        "e": "",
        "f": "Learn C#",
    }
    assert manager(layout).load("a").body == "# Heading\nbody"


def test_a_skill_with_broken_frontmatter_is_skipped_with_one_warning(
    layout: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    layout.user("good.md", "fine")
    layout.user("bad.md", "---\nthis is not yaml\n---\nbody")
    skills = manager(layout)
    with caplog.at_level(logging.WARNING, logger="openheim.skills"):
        assert [i.name for i in skills.available()] == ["good"]
        assert [i.name for i in skills.available()] == ["good"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "bad.md" in warnings[0] and "expected 'key: value'" in warnings[0]


def test_edits_show_up_on_the_next_call(layout: Layout) -> None:
    path = layout.user("s.md", "Old description")
    skills = manager(layout)
    assert skills.available()[0].description == "Old description"
    path.write_text("New description, longer", encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert skills.available()[0].description == "New description, longer"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../x", "path separator"),
        ("a/b", "path separator"),
        ("\\x", "path separator"),
        ("C:x", "drive prefix"),
        (".hidden", "starts with a dot"),
        ("..", "'..'"),
        ("a\0b", "NUL"),
        ("", "is empty"),
        ("  ", "is empty"),
        ("tab\there", "control character"),
        ("x" * 200, "longer than"),
    ],
)
def test_bad_names_are_refused(layout: Layout, name: str, problem: str) -> None:
    layout.user("x.md", "a skill that exists")
    skills = manager(layout)
    with pytest.raises(ConfigError, match="skill name") as caught:
        skills.load(name)
    assert problem in caught.value.message
    with pytest.raises(ConfigError, match=problem):
        skills.resolve(["x", name])


def test_a_symlink_out_of_the_skills_folder_is_refused(
    layout: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    secret = write(layout.root / "outside" / "secret.md", "SECRET")
    layout.user("ok.md", "fine")
    (layout.data_dir / "skills" / "evil.md").symlink_to(secret)
    with caplog.at_level(logging.WARNING, logger="openheim.skills"):
        assert [i.name for i in manager(layout).available()] == ["ok"]
        with pytest.raises(ConfigError, match="unknown skill 'evil'"):
            manager(layout).load("evil")
    assert any("evil.md" in r.getMessage() for r in caplog.records)


def test_a_symlink_inside_the_folder_is_followed(layout: Layout) -> None:
    target = layout.user("real.md", "Real skill")
    (target.parent / "alias.md").symlink_to(target)
    assert manager(layout).load("alias").body == "Real skill"


def test_an_agent_skill_folder_linking_out_is_refused(layout: Layout) -> None:
    outside = layout.root / "elsewhere"
    write(outside / "SKILL.md", "---\nname: evil\n---\nSECRET")
    (layout.project / ".agents" / "skills").mkdir(parents=True)
    (layout.project / ".agents" / "skills" / "evil").symlink_to(outside)
    assert manager(layout).available() == []


def test_a_project_skills_folder_linking_out_of_the_project_is_refused(layout: Layout) -> None:
    outside = layout.root / "notes"
    write(outside / "diary.md", "private notes")
    (layout.project / ".openheim").mkdir()
    (layout.project / ".openheim" / "skills").symlink_to(outside)
    assert manager(layout).available() == []


def test_an_agent_skill_with_a_bad_frontmatter_name_is_skipped(layout: Layout) -> None:
    layout.agents_skill("x", "---\nname: ../../etc\n---\nbody")
    assert manager(layout).available() == []


def test_unknown_skill_error_names_the_available_ones(layout: Layout) -> None:
    layout.user("beta.md", "b")
    layout.user("alpha.md", "a")
    with pytest.raises(ConfigError) as caught:
        manager(layout).load("gamma")
    assert caught.value.message == "unknown skill 'gamma' (available: alpha, beta)"
    assert caught.value.hint is not None and "skills" in caught.value.hint


def test_resolve_keeps_order_and_reports_every_unknown_name(layout: Layout) -> None:
    layout.user("a.md", "A")
    layout.user("b.md", "B")
    assert [s.name for s in manager(layout).resolve(["b", "a", "b"])] == ["b", "a"]
    with pytest.raises(ConfigError, match=r"unknown skills 'x', 'y' \(available: a, b\)"):
        manager(layout).resolve(["a", "x", "y"])


def test_untrusted_project_skills_are_loaded_but_marked(layout: Layout) -> None:
    layout.user("mine.md", "Mine")
    layout.project_skill("theirs.md", "Theirs")
    layout.agents_skill("agent", "---\ndescription: Agent\n---\nbody")
    infos = {i.name: i for i in manager(layout, trusted=False).available()}
    assert infos["mine"].summary() == "mine: Mine"
    assert infos["theirs"].summary() == "theirs: Theirs (untrusted project skill)"
    assert infos["agent"].summary() == "agent: Agent (untrusted project skill)"
    assert manager(layout, trusted=False).load("theirs").body == "Theirs"
    assert manager(layout, trusted=True).available()[2].summary() == "theirs: Theirs"


def test_long_descriptions_are_cut_in_summaries(layout: Layout) -> None:
    layout.user("long.md", "word " * 100)
    summary = manager(layout).available()[0].summary()
    assert summary.endswith("…")
    assert len(summary) <= len("long: ") + 200


def test_a_file_in_place_of_the_skills_folder_means_no_skills(layout: Layout) -> None:
    (layout.data_dir / "skills").write_text("a file, not a folder", encoding="utf-8")
    assert manager(layout).available() == []
