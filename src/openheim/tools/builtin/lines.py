"""The lines of a file's text that a regular expression matches, found in bounded time.

A file is read whole (``search`` skips files over 10 MiB) and searched with one RE2 expression
compiled in line mode (``^``/``$`` at line ends, never across a newline), chunk by chunk, so a
file without a match costs one pass of RE2 and the work can stop between chunks. The result is
the same as matching each line alone, as ``search`` promises: the text is first normalised as
its lines read (undecodable bytes as U+FFFD, ``\\r`` before a line end dropped). Patterns that
use the text anchors ``\\A`` or ``\\z`` or turn multi-line mode off mean something else on a
whole text, so those are matched one line at a time. Lines over 1 MiB are not searched.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from openheim.formats.regex import LinearRegex, compile_linear

CHUNK_BYTES = 64 * 1024
MAX_LINE_BYTES = 1024 * 1024
"""Longer lines are not searched (``search`` counts them): with a pattern that defeats RE2's
DFA, one line is one unit of work that cannot be interrupted, and this keeps it short."""
_TOO_LONG = -1
_PER_LINE = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-")
"""A pattern that may hold a text anchor or switch a flag off (escaped look-alikes included)."""

Spans = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class LineMatcher:
    """A pattern compiled for searching texts line by line."""

    pattern: str
    whole: LinearRegex | None
    """In line mode, over a whole text; None when lines must be matched one at a time."""
    single: LinearRegex
    """Over one line."""

    @classmethod
    def compile(cls, pattern: str, *, ignore_case: bool) -> LineMatcher:
        """Compile ``pattern`` (raises PatternError)."""
        single = compile_linear(pattern, ignore_case=ignore_case)
        whole = None
        if not _PER_LINE.search(pattern):
            whole = compile_linear(pattern, ignore_case=ignore_case, lines=True)
        return cls(pattern, whole, single)


@dataclass(frozen=True, slots=True)
class Hit:
    """A matching line: its number (from 1), its text and where its first match starts; or,
    with ``too_long``, a line over MAX_LINE_BYTES that was not searched."""

    number: int
    text: str
    column: int
    too_long: bool = False


def normalise(data: bytes) -> bytes:
    """``data`` as its lines read: valid UTF-8, no ``\\r`` at the end of a line."""
    if not data.isascii():
        data = data.decode("utf-8", "replace").encode("utf-8")
    if b"\r" in data:
        lines = data.split(b"\n")
        data = b"\n".join(line.rstrip(b"\r") for line in lines)
        if lines[-1] and not lines[-1].rstrip(b"\r"):
            data += b"\n"  # a last line of only \r is an empty line, not none
    return data


def hits(matcher: LineMatcher, data: bytes, stop: threading.Event) -> Iterator[Hit]:
    """The matching lines of normalised ``data``, in order, until ``stop`` is set."""
    spans = _spans(matcher.whole, data, stop) if matcher.whole else _each(matcher, data, stop)
    for number, start, end, found in spans:
        if found == _TOO_LONG:
            yield Hit(number, "", 0, too_long=True)
            continue
        line = data[start:end]
        text = line.decode("utf-8", "replace")
        column = found - start if line.isascii() else len(line[: found - start].decode("utf-8"))
        yield Hit(number, text, column)


def _spans(regex: LinearRegex, data: bytes, stop: threading.Event) -> Iterator[Spans]:
    """(number, start, end, match start) of matching lines, one RE2 search per chunk or hit;
    a line over MAX_LINE_BYTES comes with the match start _TOO_LONG, unsearched."""
    size, pos, lines = len(data), 0, _LineNumbers(data)
    while pos < size and not stop.is_set():
        chunk_end, long_line = _chunk(data, pos)
        if long_line == pos:  # the chunk is one line too long to search: skip it
            yield lines.at(pos), pos, chunk_end, _TOO_LONG
            pos = chunk_end + 1
            continue
        span = regex.find(data, pos, chunk_end)
        if span is None or (span[0] == chunk_end and chunk_end < size):
            pos = chunk_end  # no match, or only an empty one at the next line's start
            continue
        found = span[0]
        if found == size and data.endswith(b"\n"):
            return  # after the last newline: no line there
        start = data.rfind(b"\n", 0, found) + 1
        end = data.find(b"\n", found)
        end = size if end == -1 else end
        yield lines.at(start), start, end, found
        pos = end + 1


def _chunk(data: bytes, pos: int) -> tuple[int, int]:
    """The end of the chunk of whole lines from ``pos`` and the start of the line after it
    when that is over MAX_LINE_BYTES (the chunk then ends before it), else -1."""
    size = len(data)
    newline = data.find(b"\n", pos + CHUNK_BYTES)
    end = size if newline == -1 else newline + 1
    if end - pos <= MAX_LINE_BYTES:
        return end, -1
    last = data.rfind(b"\n", pos, pos + CHUNK_BYTES) + 1 or pos  # start of the last line
    last_end = size if newline == -1 else newline
    if last_end - last <= MAX_LINE_BYTES:
        return end, -1
    return (last_end, pos) if last == pos else (last, last)


class _LineNumbers:
    """Line numbers of offsets met in increasing order, counting newlines once."""

    def __init__(self, data: bytes) -> None:
        self._data, self._offset, self._number = data, 0, 1

    def at(self, offset: int) -> int:
        self._number += self._data.count(b"\n", self._offset, offset)
        self._offset = offset
        return self._number


def _each(matcher: LineMatcher, data: bytes, stop: threading.Event) -> Iterator[Spans]:
    """Like ``_spans``, but each line searched on its own."""
    size, pos, number = len(data), 0, 0
    while pos < size and not stop.is_set():
        end = data.find(b"\n", pos)
        end = size if end == -1 else end
        number += 1
        if end - pos > MAX_LINE_BYTES:
            yield number, pos, end, _TOO_LONG
        elif (span := matcher.single.find(data[pos:end], 0, end - pos)) is not None:
            yield number, pos, end, pos + span[0]
        pos = end + 1
