"""Rule text: parsing, canonical form, validation errors, and the path glob."""

from __future__ import annotations

import pytest

from openheim.errors import ConfigError
from openheim.safety.rules import Rule, parse_rule, path_regex


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("allow tool read_*", "allow tool read_*"),
        ('allow command "git status"', 'allow command "git status"'),
        ("allow command 'git   status'", 'allow command "git status"'),
        ("deny command \"echo 'a b'\"", "deny command \"echo 'a b'\""),
        ('deny path "secrets/**"', 'deny path "secrets/**"'),
        ('deny path "./build/*.o"', 'deny path "build/*.o"'),
        ("deny command rm", 'deny command "rm"'),
    ],
)
def test_rules_parse_to_a_canonical_form_that_parses_back(text: str, canonical: str) -> None:
    rule = parse_rule(text)
    assert str(rule) == canonical
    assert parse_rule(str(rule)) == rule


def test_the_effect_can_come_from_the_list() -> None:
    assert parse_rule("tool x", "deny") == Rule("deny", "tool", "x")
    assert parse_rule("deny tool x", "deny") == Rule("deny", "tool", "x")
    assert parse_rule("tool x", "deny").body == "tool x"


def test_source_is_not_part_of_a_rules_identity() -> None:
    assert parse_rule("allow tool x", source="a") == parse_rule("allow tool x", source="b")
    assert parse_rule("allow tool x", source="a").describe() == "`allow tool x` (from a)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "does not start with allow or deny"),
        ("tool x", "does not start with allow or deny"),
        ("allow toolz x", "is not KIND PATTERN"),
        ("allow command git status", "is not KIND PATTERN"),
        ("allow tool", "is not KIND PATTERN"),
        ('allow command "unclosed', "No closing quotation"),
        ('allow command "ls; rm x"', "must be one command"),
        ('allow command "ls > out"', "must be one command"),
        ('allow command "A=1 ls"', "must be one command"),
        ('allow command "rm *"', "must be one command"),
        ('allow command ""', "must be one command"),
        ('allow path "/etc/**"', "relative to the work dir"),
        ('allow path "../x"', "relative to the work dir"),
        ('allow path "~/x"', "relative to the work dir"),
        ('allow tool "a b"', "empty or has spaces"),
        ('deny path "[z-a].txt"', "not a valid glob"),
    ],
)
def test_malformed_rules_are_refused_with_a_hint(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_rule(text)
    assert caught.value.hint


def test_a_rule_in_the_wrong_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="says allow but is in the deny list"):
        parse_rule("allow tool x", "deny")


def test_constructing_a_bad_rule_directly_fails_too() -> None:
    with pytest.raises(ConfigError):
        Rule("deny", "path", "/abs")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),
        ("**/*.md", "docs/a/README.md", True),
        ("**/*.md", "README.md", True),
        ("src/**", "src/a/b.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/a.py", False),
        ("src/*", "src/a/b.py", False),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file/.txt", False),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[!-*]x", "+x", True),
        ("[!-*]x", "*x", False),
        ("[a-c]", "b", True),
        ("[-a]", "-", True),
        ("[a-]", "-", True),
        ("a.b", "axb", False),
        ("(x)+", "(x)+", True),
    ],
)
def test_path_globs(pattern: str, path: str, matches: bool) -> None:
    assert path_regex(pattern).fullmatch(path) is matches
