"""Path globs over '/'-separated relative paths, as used by ``glob`` and ``search``.

``*`` matches within one path component, ``?`` one character, ``[abc]`` / ``[!abc]`` a class,
``\\x`` a literal ``x`` and a ``**`` component zero or more folders. Patterns are relative: an
absolute pattern or a ``..`` component is refused, since it would name a place the walk never
visits. ``may_contain`` lets a walk skip folders that cannot hold a match.

A glob is translated to an RE2 expression (``openheim.formats.regex``), so matching takes time
linear in
the path whatever the pattern: ``*a*a*a*a*a*b`` against a long name of ``a`` cannot hang.
"""

from __future__ import annotations

from collections.abc import Sequence

from openheim.errors import ToolError
from openheim.formats.regex import LinearRegex, PatternError, compile_linear, escape


class GlobPattern:
    """A compiled path glob; ``matches`` takes the parts of a path relative to the search root."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.segments = _segments(pattern)
        self._segment_res = [
            None if s == "**" else _compile(pattern, _segment_regex(s)) for s in self.segments
        ]
        self._regex = _compile(pattern, _path_regex(self.segments))

    def matches(self, parts: Sequence[str]) -> bool:
        return self._regex.fullmatch("/".join(parts))

    def may_contain(self, folder: Sequence[str]) -> bool:
        """Whether some path below the folder ``folder`` (relative parts) could match."""
        for i, part in enumerate(folder):
            if i >= len(self._segment_res):
                return False
            segment = self._segment_res[i]
            if segment is None:
                return True
            if not segment.fullmatch(part):
                return False
        return len(folder) < len(self._segment_res)


def _compile(pattern: str, regex: str) -> LinearRegex:
    try:
        return compile_linear(regex, dot_all=True)
    except PatternError as err:
        raise ToolError(
            f"glob pattern {pattern!r} is not valid: {err.reason}",
            hint="check the [...] classes; a range such as [a-z] must go upwards",
        ) from None


def _segments(pattern: str) -> list[str]:
    if pattern.startswith("/"):
        raise ToolError(
            f"glob pattern {pattern!r} is absolute",
            hint="give a pattern relative to `path`, and set `path` to the folder to search",
        )
    out: list[str] = []
    for segment in pattern.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise ToolError(
                f"glob pattern {pattern!r} contains '..'",
                hint="set `path` to the folder to search instead of climbing with '..'",
            )
        if segment == "**" and out and out[-1] == "**":
            continue
        out.append(segment)
    if not out:
        raise ToolError(f"glob pattern {pattern!r} is empty", hint="try a pattern like '**/*.py'")
    return out


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
            out.append(escape(segment[i]))
        elif char == "[" and (close := _class_end(segment, i)) != -1:
            out.append(_class_regex(segment[i + 1 : close]))
            i = close
        else:
            out.append(escape(char))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``]`` is literal)."""
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
    escaped = "".join(c if c == "-" else escape(c) for c in body)
    return f"[^/{escaped}]" if negate else f"[{escaped}]"
