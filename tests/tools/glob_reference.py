"""The path glob matcher as it was before RE2: Python's backtracking ``re``. Kept only as the
reference the linear matcher is compared with (``test_glob_equivalence.py``); it hangs on
patterns such as ``*a*a*a*a*a*a*a*a*a*a*a*a*b``, so it is never given one."""

from __future__ import annotations

import re
from collections.abc import Sequence


class ReferenceGlob:
    """``matches`` and ``may_contain`` of ``GlobPattern``, with the segments already split."""

    def __init__(self, segments: list[str]) -> None:
        self._segment_res = [
            None if s == "**" else re.compile(_segment_regex(s) + r"\Z", re.DOTALL)
            for s in segments
        ]
        self._regex = re.compile(_path_regex(segments) + r"\Z", re.DOTALL)

    def matches(self, parts: Sequence[str]) -> bool:
        return self._regex.match("/".join(parts)) is not None

    def may_contain(self, folder: Sequence[str]) -> bool:
        for i, part in enumerate(folder):
            if i >= len(self._segment_res):
                return False
            segment = self._segment_res[i]
            if segment is None:
                return True
            if not segment.match(part):
                return False
        return len(folder) < len(self._segment_res)


def _path_regex(segments: list[str]) -> str:
    out: list[str] = []
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        if segment == "**":
            out.append(".*" if i == last else "(?:.*/)?")
        else:
            out.append(_segment_regex(segment) + ("" if i == last else "/"))
    return "".join(out)


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        elif char == "[" and (close := _class_end(segment, i)) != -1:
            out.append(_class_regex(segment[i + 1 : close]))
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    i = start + 1
    if i < len(segment) and segment[i] in "!^":
        i += 1
    if i < len(segment) and segment[i] == "]":
        i += 1
    return segment.find("]", i)


def _class_regex(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = "".join(c if c == "-" else re.escape(c) for c in body)
    return f"[^/{escaped}]" if negate else f"[{escaped}]"
