"""``openheim.formats.jsonedit``: JSON and JSONC scanned into spans, one member set or dropped,
every other
byte kept; a text that does not parse is refused with its line and column."""

from __future__ import annotations

import json

import pytest

from openheim.formats.jsonedit import (
    JsonSyntax,
    drop_member,
    get_member,
    parse,
    set_member,
    value_of,
)

PATH = ("mcp", "ours")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5e3, -0, true, false, null, "x\\u00e9\\n"], "b": {"c": {}}}',
        "[]",
        '  "just a string"  ',
        '{"a": 1, "a": 2}',
    ],
)
def test_values_read_as_json_reads_them(text: str) -> None:
    assert value_of(text, parse(text)) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"a": 1,}', 1, 9),
        ('{\n  "a" 1\n}', 2, 7),
        ('{"a": 1 "b": 2}', 1, 9),
        ("[1, 2", 1, 6),
        ('{"a": tru}', 1, 7),
        ("", 1, 1),
        ('{"a": 1} x', 1, 10),
        ("{/* x */}", 1, 2),
        ("{'a': 1}", 1, 2),
    ],
)
def test_malformed_text_names_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(JsonSyntax) as caught:
        parse(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert f"at line {line} column {column}" in str(caught.value)


def test_jsonc_reads_comments_and_trailing_commas() -> None:
    text = '{\n  // a\n  "x": [1, /* two */ 2,],\n}'
    assert value_of(text, parse(text, jsonc=True)) == {"x": [1, 2]}
    with pytest.raises(JsonSyntax, match="not closed"):
        parse('{"x": 1 /* open', jsonc=True)


@pytest.mark.parametrize(
    ("text", "jsonc"),
    [
        ("{}", False),
        ('{"mcp": {}}', False),
        ('{\n    "keep": 1,\n    "mcp": {\n        "other": {"b": 2}\n    }\n}\n', False),
        ('{"keep": 1, "mcp": {"other": 2}}', False),
        ('{\n  "mcp": {\n    "other": 1, // note\n  }, /* end */\n}\n', True),
        ('{\n  "mcp": {\n    // nothing yet\n  }\n}\n', True),
    ],
)
def test_set_then_drop_gives_back_the_same_bytes(text: str, jsonc: bool) -> None:
    value = {"command": ["openheim", "mcp", "serve"], "on": True}
    added = set_member(text, PATH, value, jsonc=jsonc)
    assert get_member(added, PATH, jsonc=jsonc) == value
    if not jsonc:
        assert json.loads(added)["mcp"]["ours"] == value
    dropped = drop_member(added, PATH, jsonc=jsonc)
    assert get_member(dropped, PATH, jsonc=jsonc) is None
    if "mcp" in text:
        assert dropped == text


def test_set_follows_the_files_indentation() -> None:
    text = '{\n    "mcp": {\n        "other": 1\n    }\n}\n'
    added = set_member(text, PATH, {"a": 1})
    assert added == (
        '{\n    "mcp": {\n        "other": 1,\n        "ours": {\n            "a": 1\n'
        "        }\n    }\n}\n"
    )


def test_set_replaces_only_the_value_of_an_existing_member() -> None:
    text = '{"mcp": {"ours": {"old": true}, "other": [1]}, "z": 0}'
    assert set_member(text, PATH, 5) == '{"mcp": {"ours": 5, "other": [1]}, "z": 0}'


def test_drop_of_a_last_member_removes_the_comma_before_it() -> None:
    text = '{\n  "mcp": {\n    "a": 1,\n    "ours": 2\n  }\n}'
    assert drop_member(text, PATH) == '{\n  "mcp": {\n    "a": 1\n  }\n}'
    assert drop_member('{"mcp": {"ours": 2, "a": 1}}', PATH) == '{"mcp": {"a": 1}}'


@pytest.mark.parametrize("text", ["[]", '{"mcp": 3}', '{"mcp": []}'])
def test_a_root_or_holder_that_is_no_object_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"not .*object"):
        set_member(text, PATH, 1)
