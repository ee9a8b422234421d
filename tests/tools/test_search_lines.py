"""``search`` matches a whole file with one RE2 expression, yet its answer is the one of
matching each line alone (as Python's ``re`` over the decoded lines, the reference here), for
every pattern of the table, on a text full of edge cases, whatever the chunk size."""

from __future__ import annotations

import io
import re
import threading

import pytest

from openheim.tools.builtin import lines
from openheim.tools.builtin.lines import LineMatcher, hits, normalise

TEXT = (
    b"foo bar baz\n"
    b"\n"
    b"  # comment\twith tab\r\n"
    b"FOO and foo\r\r\n"
    b"caf\xc3\xa9 cr\xc3\xa8me \xe2\x82\n"
    b"lone\rcarriage\n"
    b"barbaz foobar\n"
    b"12 345 6789\n"
    b"abc a.c axc\n"
    b"x\n"
    b"trailing   \n"
    b"\xff\xfe binary-ish\n"
    b"zzzzzzzzzzzzzzzzzzzzfoozzzzzzzzzzzzzzzzzzzz\n"
    b"last line foo"
)
PATTERNS = [
    "foo", "^foo", "foo$", "^$", "^", "$", "o+", r"\bbar\b", "[0-9]+", "a.c", "(?i)FOO", "x*",
    r"\Afoo", r"foo\z", r"(?-m:^f)", "(?s).", r"\s+$", "[^a-z ]", "é", "\ufffd", r"\t", r"^\s*#",
    "a|b", "(foo|bar)baz", r"\r", "carriage", "è", r"[0-9]{3,}", "^z+foo", "(?i)CAF", "$^",
]  # fmt: skip


def reference(pattern: str, data: bytes, ignore_case: bool) -> list[tuple[int, str, int]]:
    python = pattern.replace(r"\z", r"\Z")  # Python spells RE2's \z as \Z
    regex = re.compile(python, re.IGNORECASE if ignore_case else 0)
    out = []
    for number, raw in enumerate(io.BytesIO(data), 1):  # as a file's lines: split at \n
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if found := regex.search(line):
            out.append((number, line, found.start()))
    return out


def ours(pattern: str, data: bytes, ignore_case: bool) -> list[tuple[int, str, int]]:
    matcher = LineMatcher.compile(pattern, ignore_case=ignore_case)
    return [(h.number, h.text, h.column) for h in hits(matcher, normalise(data), threading.Event())]


@pytest.mark.parametrize("chunk", [1, 7, 64 * 1024])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_whole_text_matching_equals_line_by_line(
    pattern: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", chunk)
    for ignore_case in (False, True):
        assert ours(pattern, TEXT, ignore_case) == reference(pattern, TEXT, ignore_case)


@pytest.mark.parametrize(
    "data",
    [b"", b"\n", b"\n\n", b"a", b"a\n", b"a\r", b"a\n\r", b"\r\n", b"\r\r", b"a\r\r\nb", b"\n\na"],
)
@pytest.mark.parametrize("pattern", ["^$", "^", "$", "a", "x*", "^a$"])
def test_line_ends_and_empty_texts(pattern: str, data: bytes) -> None:
    assert ours(pattern, data, False) == reference(pattern, data, False)


def test_a_set_stop_ends_the_matching() -> None:
    stop = threading.Event()
    found = hits(LineMatcher.compile("x", ignore_case=False), b"x\n" * 10, stop)
    assert next(found).number == 1
    stop.set()
    assert list(found) == []


@pytest.mark.parametrize("pattern", ["x", r"\Ax"])  # whole-text and line-by-line matching
def test_lines_over_the_limit_are_counted_not_searched(
    pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", 4)
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 8)
    data = b"x1\n" + b"x" * 9 + b"\nx3\nshort\n" + b"x" * 20 + b"\n" + b"x" * 8 + b"\nx7"
    matcher = LineMatcher.compile(pattern, ignore_case=False)
    found = [(h.number, h.too_long) for h in hits(matcher, data, threading.Event())]
    assert found == [(1, False), (2, True), (3, False), (5, True), (6, False), (7, False)]
