"""Protected paths: a change to a file whose contents run programs is always asked about, even
in auto mode, and refused where no one can be asked unless a rule names that exact path.

``PATHS`` is the table: one line per path, whether it is protected. Every path is tried in every
mode through the agent loop, the real policy and the real ``write_file``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.approval import Ask
from openheim.safety.protected import PROTECTED, protected_reason
from openheim.testing import Reply, tool_call
from tests.safety.gated import MODES, Mode, attempt, write

PATHS: list[tuple[str, bool]] = [
    (".git/config", True),
    (".git/hooks/post-checkout", True),
    (".git/info/attributes", True),
    (".git", True),  # a worktree's .git file points git at another folder
    ("vendor/lib/.git/config", True),
    (".GIT/config", True),
    (".Git/Hooks/pre-commit", True),
    ("src/../.git/config", True),
    ("./.git//hooks/pre-push", True),
    (".g\u200cit/config", True),  # HFS+ ignores the zero-width non-joiner
    (".gitmodules", True),
    (".gitattributes", True),
    (".lfsconfig", True),
    (".openheim/permissions.toml", True),
    (".openheim/config.toml", True),
    (".openheim/skills/evil.md", True),
    (".envrc", True),
    ("sub/project/.envrc", True),
    (".bashrc", True),
    (".zshrc", True),
    (".profile", True),
    (".bash_profile", True),
    (".config/fish/config.fish", True),
    (".ssh/config", True),
    (".vscode/tasks.json", True),
    (".vscode/settings.json", True),
    (".vscode/launch.json", True),
    ("app.code-workspace", True),
    (".idea/workspace.xml", True),
    (".devcontainer/devcontainer.json", True),
    (".github/workflows/ci.yml", True),
    (".github/actions/setup/action.yml", True),
    (".gitlab-ci.yml", True),
    (".husky/pre-commit", True),
    (".pre-commit-config.yaml", True),
    ("notes.txt", False),
    ("src/app.py", False),
    ("Makefile", False),  # runs only when you run make: the project's own code
    (".github/README.md", False),
    (".gitignore", False),
    ("docs/git/config", False),
    ("my.git/config", False),
    (".envrc.example", False),
]


def expected(mode: Mode, protected: bool) -> tuple[bool, bool]:
    """(written, asked) for a write in ``mode``."""
    if mode == "ask approving":
        return True, True
    return mode == "auto" and not protected, False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("path", "protected"), PATHS)
async def test_a_write_in_every_mode(work: Path, path: str, protected: bool, mode: Mode) -> None:
    work = work.resolve()
    outcome = await attempt(work, mode, [write(path)])
    written, asked = expected(mode, protected)
    target = Path(os.path.normpath(work / path))
    assert (target.is_file() and target.read_text() == "planted\n") is written, outcome.results
    assert bool(outcome.asked) is asked
    reasons = [r for _, ask in outcome.asked for r in ask.reasons]
    assert any("a protected path" in r for r in reasons) is (protected and asked)
    if not written:
        assert outcome.results[0].status == "denied"
        assert ("a protected path" in outcome.results[0].content) is protected


@pytest.mark.parametrize(("path", "protected"), PATHS)
def test_the_table_agrees_with_protected_reason(path: str, protected: bool) -> None:
    assert (protected_reason(path) is not None) is protected


def test_the_docs_list_every_protected_name() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "safety.md").read_text()
    for entry in PROTECTED:
        assert f"`{'/'.join(entry.names)}`" in docs, entry


async def test_edit_of_git_config_in_auto_mode_is_refused(work: Path) -> None:
    """The fsmonitor attack: auto mode, no shell, edit_file on .git/config."""
    (work / ".git").mkdir()
    config = work / ".git/config"
    config.write_text("[core]\n\tbare = false\n")
    edit = {"path": ".git/config", "old_string": "bare = false", "new_string": "fsmonitor = x"}
    outcome = await attempt(work, "auto", [Reply(tool_calls=[tool_call("edit_file", edit)])])
    assert config.read_text() == "[core]\n\tbare = false\n"
    result = outcome.results[0]
    assert result.status == "denied"
    assert ".git/config, a protected path" in result.content
    assert 'allow path ".git/config"' in result.content


@pytest.mark.parametrize("mode", ["auto", "ask headless"])
async def test_a_rule_naming_the_path_allows_it(work: Path, mode: Mode) -> None:
    outcome = await attempt(work, mode, [write(".envrc")], rules=['allow path ".envrc"'])
    assert (work / ".envrc").read_text() == "planted\n", outcome.results


@pytest.mark.parametrize(
    "rule",
    [
        'allow path "**"',
        'allow path ".git/**"',
        'allow path ".git/*"',
        'allow path ".git/conf?g"',
        "allow tool write_file",
        "allow tool *",
        'allow path ".git/confi"',
    ],
)
async def test_a_wider_rule_does_not(work: Path, rule: str) -> None:
    outcome = await attempt(work, "auto", [write(".git/config")], rules=[rule])
    assert not (work / ".git/config").exists(), outcome.results


async def test_a_deny_rule_still_wins(work: Path) -> None:
    rules = ['allow path ".envrc"', 'deny path ".env*"']
    outcome = await attempt(work, "ask approving", [write(".envrc")], rules=rules)
    assert not (work / ".envrc").exists() and outcome.asked == []


@pytest.mark.parametrize(
    ("link", "target", "path"),
    [
        ("hooks", ".git/hooks/", "hooks/pre-commit"),  # a folder link into .git
        ("notes.txt", ".git/config", "notes.txt"),  # a file link onto git's config
        ("cfg", ".openheim/", "cfg/permissions.toml"),
    ],
)
async def test_symlinks_into_protected_places_are_seen_through(
    work: Path, link: str, target: str, path: str
) -> None:
    work = work.resolve()
    if target.endswith("/"):
        (work / target).mkdir(parents=True)
    else:
        (work / target).parent.mkdir(parents=True)
        (work / target).write_text("original\n")
    (work / link).symlink_to(work / target)
    outcome = await attempt(work, "auto", [write(path)])
    assert outcome.results[0].status == "denied"
    assert "a protected path" in outcome.results[0].content
    files = [p for p in work.rglob("*") if p.is_file()]
    assert all(p.read_text() == "original\n" for p in files), files


async def test_reading_a_protected_path_is_not_asked(work: Path) -> None:
    (work / ".git").mkdir()
    (work / ".git/config").write_text("[core]\n")
    read = Reply(tool_calls=[tool_call("read_file", {"path": ".git/config"})])
    outcome = await attempt(work, "ask headless", [read])
    assert outcome.results[0].status == "completed"


async def test_the_question_names_the_path_and_why(work: Path) -> None:
    outcome = await attempt(work, "ask approving", [write(".vscode/tasks.json")])
    (_, ask), *_ = outcome.asked
    assert isinstance(ask, Ask)
    assert ask.reasons == (
        "changes .vscode/tasks.json, a protected path: the editor runs tasks and tools named in it",
    )
    assert ask.rules == ('allow path ".vscode/tasks.json"',)
    assert not ask.auto_allows
