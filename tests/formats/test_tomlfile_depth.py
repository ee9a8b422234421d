"""TOML nested too deep to parse: a config file, a skill's or a profile's frontmatter, in the
user's folders or a cloned project's, is refused (config) or skipped with one warning (skills,
profiles); never a ``RecursionError`` that stops every command in the folder."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from openheim.agents import load_profiles
from openheim.errors import ConfigError
from openheim.formats.tomlfile import MAX_DEPTH, TooDeep, check_nesting, loads, read_toml
from openheim.skills import SkillsManager
from openheim.skills.frontmatter import FrontmatterError, split_frontmatter
from openheim.term import exit_codes
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import configure, openheim

DEEP = 5000

DEEP_VALUES = {
    "arrays": "x = " + "[" * DEEP + "]" * DEEP,
    "inline tables": "x = " + "{a = " * DEEP + "1" + "}" * DEEP,
    "dotted keys": ".".join(["k"] * DEEP) + " = 1",
    "table header": "[" + ".".join(["k"] * DEEP) + "]",
    "unclosed arrays": "x = " + "[" * DEEP,
}


@pytest.mark.parametrize("text", DEEP_VALUES.values(), ids=DEEP_VALUES.keys())
def test_deep_toml_is_refused_without_recursion(text: str) -> None:
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH}"):
        loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH,
        "x = " + "{a = " * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1),
        f'x = "{"[" * DEEP}"',
        f"x = '{'{' * DEEP}'",
        f'x = """\n{"[" * DEEP}\n"""',
        f"x = '''\n{'[' * DEEP}\n'''",
        f'x = "\\"{"[" * DEEP}"',
        f'x = """\\"""{"[" * DEEP}"""',
        f'x = """a""""\ny = "{"[" * DEEP}"',
        f"x = '''a'''''\ny = '{'[' * DEEP}'",
        f"# {'[' * DEEP}\nx = 1",
        f'"{"[" * DEEP}" = 1',
    ],
    ids=[
        "arrays at the limit",
        "inline tables at the limit",
        "basic string",
        "literal string",
        "multi-line basic string",
        "multi-line literal string",
        "escaped quote in a basic string",
        "escaped quotes in a multi-line string",
        "quotes before a multi-line closing",
        "quotes before a multi-line literal closing",
        "comment",
        "quoted key",
    ],
)
def test_brackets_in_strings_and_comments_and_nesting_up_to_the_limit_are_read(
    text: str,
) -> None:
    check_nesting(text)
    loads(text)


def test_the_refusal_names_the_line() -> None:
    with pytest.raises(TooDeep, match="line 3"):
        check_nesting('a = """\n"""\nx = ' + "[" * DEEP)


@pytest.mark.parametrize("text", DEEP_VALUES.values(), ids=DEEP_VALUES.keys())
def test_a_deep_config_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"{path}: .*deeper than {MAX_DEPTH}"):
        read_toml(path)


@pytest.mark.parametrize("text", DEEP_VALUES.values(), ids=DEEP_VALUES.keys())
def test_deep_frontmatter_is_a_frontmatter_error(text: str) -> None:
    with pytest.raises(FrontmatterError, match=r"TOML frontmatter.*deeper than"):
        split_frontmatter(f"+++\n{text}\n+++\nbody\n")


DEEP_SKILL = f"+++\n{DEEP_VALUES['arrays']}\n+++\nbody\n"


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("user", "skills/deep.md"),
        ("project", ".openheim/skills/deep.md"),
        ("project", ".agents/skills/deep/SKILL.md"),
    ],
)
def test_a_deep_skill_is_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, where: str, path: str, trusted: bool
) -> None:
    data_dir, project = tmp_path / "home", tmp_path / "project"
    (data_dir / "skills").mkdir(parents=True)
    (data_dir / "skills" / "good.md").write_text("A good skill")
    deep = (data_dir if where == "user" else project) / path
    deep.parent.mkdir(parents=True, exist_ok=True)
    deep.write_text(DEEP_SKILL)
    with caplog.at_level(logging.WARNING, logger="openheim.skills"):
        names = [i.name for i in SkillsManager(data_dir, project, trusted).available()]
    assert names == ["good"]
    [warning] = [r.getMessage() for r in caplog.records]
    assert "deep" in warning and f"deeper than {MAX_DEPTH}" in warning


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
@pytest.mark.parametrize("where", ["user", "project"])
def test_a_deep_profile_is_skipped_with_one_warning(
    tmp_path: Path, where: str, trusted: bool
) -> None:
    data_dir, project = tmp_path / "home", tmp_path / "project"
    (data_dir / "agents").mkdir(parents=True)
    (data_dir / "agents" / "good.md").write_text("You review.")
    folder = data_dir / "agents" if where == "user" else project / ".openheim" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deep.md").write_text(DEEP_SKILL)
    profiles, [warning] = load_profiles(data_dir, project, trusted)
    assert list(profiles) == ["good"]
    assert "deep.md" in warning and f"deeper than {MAX_DEPTH}" in warning


@pytest.mark.parametrize("folder", ["skills", "agents"])
def test_run_goes_on_past_a_deep_skill_or_profile(home: Path, work: Path, folder: str) -> None:
    (home / folder).mkdir()
    (home / folder / "deep.md").write_text(DEEP_SKILL)
    with FakeLLMServer([FakeReply(text="answered")]) as server:
        configure(home, server)
        result = openheim("run", "hi", home=home, cwd=work)
    assert (result.returncode, result.stdout) == (0, "answered\n"), result.stderr
    assert "Traceback" not in result.stderr
    assert f"deeper than {MAX_DEPTH}" in result.stderr


def test_a_deep_project_config_is_a_one_line_error(home: Path, work: Path) -> None:
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text(DEEP_VALUES["inline tables"])
    configure(home, None)
    result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == exit_codes.USAGE
    assert "Traceback" not in result.stderr
    assert f"deeper than {MAX_DEPTH}" in result.stderr
