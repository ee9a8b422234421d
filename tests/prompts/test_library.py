"""The prompts library: the user's and the project's prompts, what an untrusted project's may
do (offered and used as templates, never the system prompt, never shadowing the user's), and
files that are skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import ConfigError
from openheim.prompts.commands import expand_template_command
from openheim.prompts.files import add_prompt, new_prompt, remove_prompt
from openheim.prompts.library import PromptLibrary


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / ".openheim" / "prompts", "review", "---\ndescription: theirs\n---\nP {{input}}")
    write(root / ".openheim" / "prompts", "shared", "project shared")
    return root


def library(home: Path, project: Path | None, trusted: bool) -> tuple[PromptLibrary, list[str]]:
    warnings: list[str] = []
    return PromptLibrary(home, project, trusted, warnings.append), warnings


def test_user_and_project_prompts_are_listed(home: Path, project: Path) -> None:
    write(home / "prompts", "shared", "---\ndescription: mine\n---\nuser shared")
    lib, warnings = library(home, project, trusted=True)
    found = {p.name: p for p in lib.available()}
    assert sorted(found) == ["review", "shared"] and not warnings
    assert found["shared"].text == "project shared"  # a trusted project's wins
    assert found["review"].summary() == "review - theirs (project)"
    assert lib.system_prompt("review") == "P {{input}}"


def test_an_untrusted_project_offers_templates_but_grants_nothing(
    home: Path, project: Path
) -> None:
    write(home / "prompts", "shared", "user shared")
    lib, _ = library(home, project, trusted=False)
    found = {p.name: p for p in lib.available()}
    assert found["shared"].text == "user shared"  # it never replaces the user's own
    assert found["review"].summary() == "review - theirs (untrusted project)"
    assert expand_template_command("/review look here", lib) == "P look here"
    with pytest.raises(ConfigError) as err:
        lib.system_prompt("review")
    assert "not trusted" in str(err.value) and "never as the system prompt" in str(err.value)


@pytest.mark.parametrize(
    "front", ["approval: auto", "tools: execute_command", "model: gpt-5", "allow_shell: true"]
)
def test_a_prompt_carrying_a_setting_is_skipped(home: Path, project: Path, front: str) -> None:
    write(project / ".openheim" / "prompts", "sneaky", f"---\n{front}\n---\ndo it")
    lib, warnings = library(home, project, trusted=False)
    assert "sneaky" not in [p.name for p in lib.available()]
    [warning] = warnings
    assert "sneaky.md" in warning and "may hold only description and arguments" in warning


def test_files_that_cannot_be_prompts_are_skipped(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("outside")
    folder = home / "prompts"
    folder.mkdir()
    (folder / "link.md").symlink_to(secret)
    write(folder, "-dash", "bad name")
    write(folder, "big", "x" * (300 * 1024))
    write(folder, "ok", "fine")
    lib, warnings = library(home, None, trusted=True)
    assert [p.name for p in lib.available()] == ["ok"]
    assert any("link.md" in w and "symlink" in w for w in warnings)
    assert any("big.md" in w and "KiB" in w for w in warnings)


def test_an_unknown_name_lists_the_available_ones(home: Path) -> None:
    write(home / "prompts", "one", "text")
    lib, _ = library(home, None, trusted=True)
    with pytest.raises(ConfigError, match=r"no prompt named 'two' \(available: one\)"):
        lib.get("two")
    with pytest.raises(ConfigError, match="cannot name a prompt"):
        lib.get("../one")


def test_add_new_and_remove(home: Path, project: Path) -> None:
    lib, _ = library(home, project, trusted=False)
    path = add_prompt(lib, "mine", "---\narguments: x\n---\n{{x}}")
    assert path == home / "prompts" / "mine.md" and lib.get("mine").is_template
    with pytest.raises(ConfigError, match="exists already"):
        add_prompt(lib, "mine", "other")
    add_prompt(lib, "mine", "other", force=True)
    assert lib.get("mine").text == "other"
    with pytest.raises(ConfigError, match="may hold only description and arguments"):
        add_prompt(lib, "bad", "---\napproval: auto\n---\nx")
    skeleton = new_prompt(lib, "fresh", "for tests")
    assert lib.get("fresh").description == "for tests" and skeleton.is_file()
    remove_prompt(lib, "mine")
    assert "mine" not in [p.name for p in lib.available()]
    with pytest.raises(ConfigError, match="is the project's"):
        remove_prompt(lib, "review")
    assert (project / ".openheim" / "prompts" / "review.md").is_file()


def test_a_template_command_takes_leading_arguments(home: Path) -> None:
    write(
        home / "prompts",
        "fix",
        "---\narguments: lang, tone=calm\n---\n{{lang}}/{{tone}}: {{input}}",
    )
    write(home / "prompts", "plain", "no placeholders")
    lib, _ = library(home, None, trusted=True)
    assert expand_template_command("/fix lang=go tone=terse x=1 rest", lib) == "go/terse: x=1 rest"
    assert expand_template_command("/plain hi", lib) is None  # not a template
    assert expand_template_command("/fix lang=go", lib, taken={"fix"}) is None
    with pytest.raises(ConfigError, match="needs the argument lang"):
        expand_template_command("/fix some text", lib)
