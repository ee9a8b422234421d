"""``openheim.formats.regex``: RE2 patterns, the literal escaping shared with Python's ``re``,
matching
of names that are not valid UTF-8, and the ``lines`` mode used by ``search``."""

from __future__ import annotations

import re

import pytest

from openheim.formats.regex import PatternError, compile_linear, escape, utf8

EVERY_CHARACTER = "".join(map(chr, range(1, 128))) + "é€\U0001f600"


@pytest.mark.parametrize("char", EVERY_CHARACTER)
def test_escape_matches_the_character_itself_in_re2_and_in_python(char: str) -> None:
    pattern = escape(char)
    assert compile_linear(pattern, dot_all=True).fullmatch(char)
    assert not compile_linear(pattern, dot_all=True).fullmatch("x" if char != "x" else "y")
    assert re.fullmatch(pattern, char)


def test_lone_surrogates_match_as_one_replacement_character_each() -> None:
    name = "caf\udce9\udcff.py"
    assert utf8(name) == "caf\ufffd\ufffd.py".encode()
    assert compile_linear("caf..\\.py").fullmatch(name)
    assert not compile_linear("caf.\\.py").fullmatch(name)


def test_flags_and_the_lines_mode() -> None:
    assert compile_linear("a.b", dot_all=True).fullmatch("a\nb")
    assert not compile_linear("a.b").fullmatch("a\nb")
    assert compile_linear("ABC", ignore_case=True).fullmatch("abc")
    lines = compile_linear(r"^b\s*$", lines=True)
    assert lines.find(b"a\nb  \nc", 0, 7) == (2, 5)
    assert compile_linear(r"a\sb", lines=True).find(b"a\nb", 0, 3) is None  # never spans lines


def test_find_sees_the_text_around_its_range() -> None:
    regex = compile_linear(r"\bword")
    assert regex.find(b"sword word", 1, 10) == (6, 10)  # not at 1: "s" precedes it
    assert regex.find(b"a word", 0, 4) is None  # the match would end past endpos


def test_an_error_keeps_the_pattern_and_a_short_reason() -> None:
    with pytest.raises(PatternError) as err:
        compile_linear("(?<=a)b")
    assert (err.value.pattern, err.value.reason) == (
        "(?<=a)b",
        "lookbehind (?<=...) is not supported",
    )
    assert str(err.value) == err.value.reason
