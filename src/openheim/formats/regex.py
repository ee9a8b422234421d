"""Regular expressions whose matching time is linear in the text, whatever the pattern.

Every pattern that a model, a project or a user's config supplies (``search``, the globs of
``glob`` and of path rules) is compiled here, with RE2: it has no backtracking, so a pattern
such as ``(a+)+$`` cannot take exponential time. The price is a smaller syntax: no
backreferences, no lookaround, no atomic groups or possessive quantifiers, and ``\\d``, ``\\w``,
``\\s`` and ``\\b`` are ASCII-only (``\\pL`` and ``[[:alpha:]]`` name wider classes).
``PatternError`` names the construct that is not supported.

Text is matched as UTF-8. A ``str`` with lone surrogates (a file name that is not valid UTF-8)
is matched with each lone surrogate read as U+FFFD, one character for one.
"""

from __future__ import annotations

import re
from typing import Any

_UNSUPPORTED_GROUPS = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "atomic group (?>...)",
    "(?#": "comment group (?#...)",
    "(?(": "conditional group (?(...)...)",
    "(?P=": "named backreference (?P=name)",
    "(?P>": "recursion (?P>name)",
}
_GROUP_OPERATOR = re.compile(r"invalid perl operator: (.*)")
_BACKREFERENCE = re.compile(r"invalid escape sequence: (\\[1-9])")
_POSSESSIVE = re.compile(r"bad repetition operator: ([*+?}]\+)")
_SURROGATE = re.compile("[\ud800-\udfff]")


class PatternError(ValueError):
    """A pattern RE2 cannot compile; ``reason`` says why in a few words."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(reason)
        self.pattern = pattern
        self.reason = reason


class LinearRegex:
    """A compiled RE2 pattern. ``pattern`` is the text it was compiled from.

    Matching calls the binding's compiled object (``Match``) directly: the binding's public
    ``search`` and ``fullmatch`` wrap that one call in a generator and a match object, which
    doubles the cost of matching a short path.
    """

    __slots__ = ("_anchors", "_match", "pattern")

    def __init__(self, pattern: str, compiled: Any, anchors: Any) -> None:
        self.pattern = pattern
        self._match = compiled._regexp.Match
        self._anchors = anchors

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches."""
        data = utf8(text)
        spans = self._match(self._anchors.ANCHOR_BOTH, data, 0, len(data))
        return bool(spans[0][0] >= 0)

    def find(self, data: bytes, pos: int, endpos: int) -> tuple[int, int] | None:
        """The byte span of the leftmost match within ``data[pos:endpos]``, or None; anchors
        and ``\\b`` see the text around the range."""
        start, end = self._match(self._anchors.UNANCHORED, data, pos, endpos)[0]
        return None if start < 0 else (start, end)


def compile_linear(
    pattern: str, *, ignore_case: bool = False, dot_all: bool = False, lines: bool = False
) -> LinearRegex:
    """Compile ``pattern`` with RE2 (raises PatternError).

    ``dot_all``: ``.`` matches a newline too. ``lines``: the text is many lines and a match
    never spans two; ``^`` and ``$`` match at each line's start and end.
    """
    import re2  # imported on first use: it is not needed to start up

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    options.never_nl = lines
    options.never_capture = True
    try:
        encoded = pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise PatternError(pattern, "it contains a lone surrogate (not valid Unicode)") from None
    try:
        compiled = re2.compile(b"(?m)" + encoded if lines else encoded, options)
    except re2.error as err:
        raise PatternError(pattern, _reason(err)) from None
    return LinearRegex(pattern, compiled, re2._Anchor)


def _reason(err: Exception) -> str:
    """RE2's complaint, naming the construct when it is one RE2 leaves out on purpose."""
    raw = err.args[0] if err.args else ""
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if found := _BACKREFERENCE.fullmatch(message):
        return f"backreferences such as {found[1]} are not supported"
    if message.endswith("invalid escape sequence: \\Z"):
        return "\\Z is not supported; write \\z for the end of the text"
    if found := _POSSESSIVE.fullmatch(message):
        return f"possessive quantifiers such as {found[1]} are not supported"
    if found := _GROUP_OPERATOR.fullmatch(message):
        operator = found[1]
        for prefix, name in _UNSUPPORTED_GROUPS.items():
            if prefix.startswith(operator) or operator.startswith(prefix):
                return f"{name} is not supported"
        return f"the group or flag {operator} is not supported (flags: i, m, s, U)"
    if message.startswith("pattern too large"):
        return "the pattern is too large"
    return message


def escape(text: str) -> str:
    """``text`` as a pattern that matches it literally (in RE2's syntax and Python's alike)."""
    return "".join(map(_literal, text))


def _literal(char: str) -> str:
    if char.isalnum() or char == "_" or not char.isascii():
        return char
    return "\\" + char if char.isprintable() and char != " " else f"\\x{ord(char):02x}"


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (undecodable bytes of a name) become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")
