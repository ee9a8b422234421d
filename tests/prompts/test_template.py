"""Template expansion: arguments with defaults, ``{{input}}``, errors that name what is
missing or unknown, and values that are never expanded again."""

from __future__ import annotations

import pytest

from openheim.errors import ConfigError
from openheim.prompts.template import Argument, expand, parse_arguments, parse_given

TEXT = "Review this {{lang}} code for {{ focus }}:\n\n{{input}}"
DECLARED = parse_arguments("lang, focus=bugs", "review.md")


def test_arguments_defaults_and_input_are_filled() -> None:
    out = expand("review", TEXT, DECLARED, {"lang": "Python"}, "def f(): pass")
    assert out == "Review this Python code for bugs:\n\ndef f(): pass"
    given = {"lang": "Go", "focus": "speed"}
    assert expand("review", TEXT, DECLARED, given, "x").startswith("Review this Go code for speed")


def test_a_missing_required_argument_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        expand("review", TEXT, DECLARED, {}, "code")
    assert str(err.value).startswith("prompt 'review' needs the argument lang")
    assert err.value.hint == "--arg lang=VALUE"


def test_an_undeclared_placeholder_is_a_required_argument() -> None:
    with pytest.raises(ConfigError, match="needs the arguments lang, tone"):
        expand("p", "{{lang}} {{tone}}", (), {})
    assert expand("p", "{{lang}} {{tone}}", (), {"lang": "a", "tone": "b"}) == "a b"


def test_an_unknown_argument_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        expand("review", TEXT, DECLARED, {"lang": "Go", "colour": "red"})
    assert "no argument 'colour' (its arguments: lang, focus)" in str(err.value)


def test_input_follows_a_prompt_without_an_input_placeholder() -> None:
    assert expand("p", "Be brief.", (), {}, "what is 2+2?") == "Be brief.\n\nwhat is 2+2?"
    assert expand("p", "Be brief.", (), {}, "") == "Be brief."


def test_values_are_not_expanded_again() -> None:
    out = expand("p", "{{a}} and {{input}}", (), {"a": "{{input}}"}, "{{a}}")
    assert out == "{{input}} and {{a}}"


def test_toml_argument_tables() -> None:
    raw = {"lang": {"description": "the language"}, "focus": {"default": "bugs"}}
    args = parse_arguments(raw, "p.md")
    assert args == (
        Argument("lang", None, True, "the language"),
        Argument("focus", "bugs", False, ""),
    )
    optional = parse_arguments({"note": {"required": False}}, "p.md")
    assert expand("p", "[{{note}}]", optional, {}) == "[]"


@pytest.mark.parametrize(
    "raw", ["input", "bad name", {"x": {"colour": "red"}}, {"x": "plain"}, ["a"], "a/b"]
)
def test_bad_argument_declarations_are_errors(raw: object) -> None:
    with pytest.raises(ConfigError, match=r"p\.md"):
        parse_arguments(raw, "p.md")


def test_arg_pairs() -> None:
    assert parse_given(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ConfigError, match="is not NAME=VALUE"):
        parse_given(["novalue"])
