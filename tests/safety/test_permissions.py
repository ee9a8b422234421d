"""permissions.toml: parsing and its errors, add/remove round trips, untrusted narrowing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.errors import ConfigError
from openheim.safety.permissions import (
    add_rule,
    load_rules,
    project_permissions,
    read_rules,
    remove_rule,
    user_permissions,
)
from openheim.safety.policy import PolicyGate
from openheim.safety.rules import parse_rule
from openheim.tools.sandbox import PathSandbox

VALID = """
[rules]
allow = ["tool read_*", 'command "git status"', 'allow path "src/**"']
deny = ['path "secrets/**"']
"""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".openheim").mkdir(parents=True)
    return path


def test_a_missing_file_has_no_rules(tmp_path: Path) -> None:
    assert read_rules(tmp_path / "nope.toml") == []


def test_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text(VALID)
    rules = read_rules(path)
    assert [str(r) for r in rules] == [
        "allow tool read_*",
        'allow command "git status"',
        'allow path "src/**"',
        'deny path "secrets/**"',
    ]
    assert {r.source for r in rules} == {str(path)}


def test_an_empty_file_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text("[rules]\n")
    assert read_rules(path) == []


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("[rules]\nallow = [\n", "invalid TOML", "fix the syntax"),
        ("[rules]\nalow = []\n", "rules.alow: unknown key", "did you mean 'allow'?"),
        ("[rule]\nallow = []\n", "rule: unknown key", "did you mean 'rules'?"),
        ('[rules]\nallow = "tool x"\n', "rules.allow: expected a list", "[rules] table"),
        ("[rules]\ndeny = [1]\n", r"rules.deny\[0\]: expected a string", "[rules] table"),
        (
            "[rules]\ndeny = ['tool x', 'command \"ls; rm\"']\n",
            r"rules.deny\[1\]: command pattern 'ls; rm' must be one command",
            "git status",
        ),
        (
            "[rules]\nallow = ['deny tool x']\n",
            r"rules.allow\[0\]: rule 'deny tool x' says",
            "move",
        ),
    ],
)
def test_errors_name_the_file_and_the_entry(
    tmp_path: Path, text: str, message: str, hint: str
) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        read_rules(path)
    assert str(caught.value).startswith(f"{path}: ") or str(path) in str(caught.value)
    assert hint in (caught.value.hint or "")


def test_a_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text("[rules]\nallow = ['tool x']\ndeny = [tool y]\n")
    with pytest.raises(ConfigError, match=r"line 3"):
        read_rules(path)


def test_add_and_remove_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "new" / ".openheim" / "permissions.toml"
    first = parse_rule('allow command "git status"')
    second = parse_rule('deny path "it\'s/**"')
    third = parse_rule("allow tool github__*")
    assert add_rule(path, first) is True
    assert add_rule(path, second) is True
    assert add_rule(path, third) is True
    assert add_rule(path, first) is False
    assert read_rules(path) == [first, third, second]
    raw = tomllib.loads(path.read_text())
    assert raw == {
        "rules": {"allow": ['command "git status"', "tool github__*"], "deny": ['path "it\'s/**"']}
    }
    assert remove_rule(path, first) is True
    assert remove_rule(path, first) is False
    assert read_rules(path) == [third, second]
    assert remove_rule(path, third) and remove_rule(path, second)
    assert read_rules(path) == []
    assert tomllib.loads(path.read_text()) == {"rules": {"allow": [], "deny": []}}


COMMENTED = """\
# My rules, written by hand.
[rules]
# reading is always fine
allow = [
    'tool read_*',  # the read tools
]
deny = ['command "git push"']  # never push from the agent
"""


def test_add_and_remove_keep_the_files_comments_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text(COMMENTED)
    added = parse_rule('allow command "git status"')
    assert add_rule(path, added)
    entry = "    'tool read_*',  # the read tools\n"
    assert path.read_text() == COMMENTED.replace(entry, entry + "    'command \"git status\"',\n")
    assert read_rules(path) == [
        parse_rule("allow tool read_*"),
        added,
        parse_rule('deny command "git push"'),
    ]
    assert remove_rule(path, added)
    assert path.read_text() == COMMENTED  # as the user wrote it, byte for byte


def test_a_rule_written_twice_is_removed_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text("[rules]\nallow = ['tool x', 'allow tool x', 'tool y']  # mine\n")
    assert remove_rule(path, parse_rule("allow tool x"))
    assert path.read_text() == "[rules]\nallow = ['tool y']  # mine\n"


def test_odd_characters_survive_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    rule = parse_rule("deny command \"printf '\\t\x7f'\"")
    add_rule(path, rule)
    assert read_rules(path) == [rule]


def test_remove_from_a_missing_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    assert remove_rule(path, parse_rule("allow tool x")) is False
    assert not path.exists()


def test_add_refuses_to_overwrite_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text("not toml [")
    with pytest.raises(ConfigError):
        add_rule(path, parse_rule("allow tool x"))
    assert path.read_text() == "not toml ["


def test_load_user_and_trusted_project_rules(data_dir: Path, project: Path) -> None:
    user_permissions(data_dir).write_text("[rules]\nallow = ['tool a']\n")
    project_permissions(project).write_text("[rules]\nallow = ['tool b']\ndeny = ['tool c']\n")
    rules, notices = load_rules(data_dir, project, trusted=True)
    assert [str(r) for r in rules.rules] == ["allow tool a", "allow tool b", "deny tool c"]
    assert notices == []


def test_untrusted_project_may_only_add_deny_rules(data_dir: Path, project: Path) -> None:
    project_permissions(project).write_text("[rules]\nallow = ['tool b']\ndeny = ['tool c']\n")
    rules, notices = load_rules(data_dir, project, trusted=False)
    assert [str(r) for r in rules.rules] == ["deny tool c"]
    assert len(notices) == 1
    assert "ignored `allow tool b`" in notices[0]
    assert str(project_permissions(project)) in notices[0]
    assert f"openheim trust {project}" in notices[0]


def test_untrusted_project_allow_rule_does_not_allow(data_dir: Path, project: Path) -> None:
    project_permissions(project).write_text(
        "[rules]\nallow = ['tool write_file']\ndeny = ['path \"secrets/**\"']\n"
    )
    rules, _ = load_rules(data_dir, project, trusted=False)
    gate = PolicyGate("ask", rules, PathSandbox(project))
    write = ApprovalRequest("c", "write_file", {"path": "a.txt"}, False, "edit", str(project))
    assert isinstance(gate.explain(write).verdict, Ask)
    read = ApprovalRequest("c", "read_file", {"path": "secrets/k"}, True, "read", str(project))
    assert isinstance(gate.explain(read).verdict, Deny)
    trusted, _ = load_rules(data_dir, project, trusted=True)
    assert isinstance(
        PolicyGate("ask", trusted, PathSandbox(project)).explain(write).verdict, Allow
    )


def test_no_project_and_no_files(data_dir: Path) -> None:
    rules, notices = load_rules(data_dir, None, trusted=False)
    assert rules.rules == ()
    assert notices == []


def test_a_rule_in_both_files_is_kept_once(data_dir: Path, project: Path) -> None:
    user_permissions(data_dir).write_text("[rules]\ndeny = ['tool x']\n")
    project_permissions(project).write_text("[rules]\ndeny = ['tool x']\n")
    rules, _ = load_rules(data_dir, project, trusted=False)
    assert [str(r) for r in rules.rules] == ["deny tool x"]
