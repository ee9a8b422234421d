"""Frontmatter: TOML and the YAML subset, and what counts as no frontmatter at all."""

from __future__ import annotations

import pytest

from openheim.skills.frontmatter import (
    FrontmatterError,
    parse_yaml_subset,
    split_frontmatter,
    text_field,
)


def test_toml_frontmatter_is_parsed_and_removed_from_the_body() -> None:
    doc = split_frontmatter('+++\ndescription = "From TOML"\ntools = ["a"]\n+++\n# Title\nbody\n')
    assert doc.meta == {"description": "From TOML", "tools": ["a"]}
    assert doc.body == "# Title\nbody\n"


def test_yaml_frontmatter_is_parsed_and_removed_from_the_body() -> None:
    doc = split_frontmatter("---\nname: pdf\ndescription: Fill PDF forms\n---\nBody\n")
    assert doc.meta == {"name": "pdf", "description": "Fill PDF forms"}
    assert doc.body == "Body\n"


def test_a_byte_order_mark_does_not_hide_the_fence() -> None:
    assert split_frontmatter("\ufeff---\nname: x\n---\nb").meta == {"name": "x"}


@pytest.mark.parametrize(
    "text",
    ["# Just markdown\n---\nname: x\n---\n", "---\nname: never closed\n", "", "text +++\n"],
)
def test_without_a_complete_block_at_the_top_everything_is_body(text: str) -> None:
    doc = split_frontmatter(text)
    assert doc.meta == {}
    assert doc.body == text


def test_invalid_toml_is_an_error() -> None:
    with pytest.raises(FrontmatterError, match="invalid TOML"):
        split_frontmatter('+++\ndescription = "unterminated\n+++\nbody')


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("key: plain words", "plain words"),
        ("key: plain # a comment", "plain"),
        ("key: 'it''s single'", "it's single"),
        ('key: "say \\"hi\\"\\tthen\\\\ \\u00e9"', 'say "hi"\tthen\\ é'),
        ('key: "has # inside" # comment', "has # inside"),
        ("key: a: b", "a: b"),
        ("key:", ""),
    ],
)
def test_yaml_scalars(line: str, value: str) -> None:
    assert parse_yaml_subset(line) == {"key": value}


def test_yaml_comments_blank_lines_and_continuations() -> None:
    block = "# leading comment\n\nname: x\ndescription: first line\n  second line\n\nother: y\n"
    assert parse_yaml_subset(block) == {
        "name": "x",
        "description": "first line second line",
        "other": "y",
    }


def test_yaml_block_scalars() -> None:
    block = "lit: |\n  one\n    two\nfold: >-\n  a\n  b\n\n  c\n"
    assert parse_yaml_subset(block) == {"lit": "one\n  two", "fold": "a b\nc"}


def test_nested_yaml_is_kept_as_text_under_its_key() -> None:
    meta = parse_yaml_subset("name: x\nmetadata:\n  author: me\n  version: 2\n")
    assert meta["name"] == "x"
    assert meta["metadata"] == "author: me version: 2"


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("just text", "line 1: expected 'key: value'"),
        ("  indented: first", "indented line before any key"),
        ("key: 'open", "unterminated quoted value"),
        ('key: "bad \\q escape"', "unknown escape"),
        ("key: 'done' trailing", "unexpected text after a quoted value"),
    ],
)
def test_malformed_yaml_is_an_error_naming_the_problem(block: str, problem: str) -> None:
    with pytest.raises(FrontmatterError, match=problem):
        parse_yaml_subset(block)


def test_text_field_only_accepts_non_blank_strings() -> None:
    meta = {"a": "  text ", "b": "   ", "c": 3}
    assert text_field(meta, "a") == "text"
    assert text_field(meta, "b") is None
    assert text_field(meta, "c") is None
    assert text_field(meta, "missing") is None
