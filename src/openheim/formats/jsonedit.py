"""Editing JSON (and JSONC) files that other programs own: one member changes, every other byte
stays where it was.

The text is scanned once into the spans of its values (``Node``) and object members
(``Member``); an edit splices new text into or out of those spans, so formatting, key order,
comments and trailing commas elsewhere survive. JSONC (comments, trailing commas) is read only
when asked for. A file that does not parse raises ``JsonSyntax`` with the line and column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from json import decoder
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = ("true", "false", "null")
_SCAN_STRING: Callable[[str, int, bool], tuple[str, int]] = decoder.scanstring  # type: ignore[attr-defined]
"""The ``json`` module's string scanner (C): from after the opening quote to the closing one,
the decoded text and the offset after it."""
MAX_DEPTH = 256
"""The deepest nesting of objects and arrays read (deeper is refused, never a RecursionError)."""


class JsonSyntax(ValueError):
    """The text is not JSON (or JSONC); ``line`` and ``column`` count from 1."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line} column {column}")
        self.line = line
        self.column = column


@dataclass
class Member:
    """``"key": value`` of an object: where its key starts, its value, and the comma after it
    (its offset, or None when it is the last member without a trailing comma)."""

    key: str
    start: int
    value: Node
    comma: int | None = None


@dataclass
class Node:
    """A value's span ``[start, end)``; an object's members in order (None for other values)."""

    start: int
    end: int
    members: list[Member] | None = None
    items: list[Node] = field(default_factory=list)

    def member(self, key: str) -> Member | None:
        """The member named ``key``. One named so twice is refused (``ValueError``): readers
        differ on which they keep, and an edit of one would leave the other in effect."""
        found = [m for m in self.members or [] if m.key == key]
        if len(found) > 1:
            raise ValueError(f'the member "{key}" appears {len(found)} times: keep one')
        return found[0] if found else None


def parse(text: str, *, jsonc: bool = False) -> Node:
    """The spans of ``text``, one JSON value; JSONC comments and trailing commas with ``jsonc``."""
    scanner = _Scanner(text, jsonc)
    node = scanner.value()
    scanner.skip()
    if scanner.pos != len(text):
        raise scanner.error("unexpected text after the JSON value")
    return node


def value_of(text: str, node: Node) -> Any:
    """The value of ``node`` as Python data (comments and trailing commas dropped)."""
    if node.members is not None:
        return {m.key: value_of(text, m.value) for m in node.members}
    if text[node.start] == "[":
        return [value_of(text, item) for item in node.items]
    return json.loads(text[node.start : node.end])


class _Scanner:
    def __init__(self, text: str, jsonc: bool) -> None:
        self.text = text
        self.jsonc = jsonc
        self.pos = 0
        self.depth = 0

    def error(self, message: str) -> JsonSyntax:
        """``message`` at the scanner's place."""
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return JsonSyntax(message, line, column)

    def skip(self) -> None:
        """Past whitespace, and with JSONC past comments."""
        text = self.text
        while self.pos < len(text):
            if text[self.pos] in " \t\r\n":
                self.pos += 1
            elif self.jsonc and text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif self.jsonc and text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("a /* comment is not closed")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        start = self.pos
        char = self.text[start : start + 1]
        if char in ("{", "["):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"the text is nested deeper than {MAX_DEPTH} levels")
            node = self._object() if char == "{" else self._array()
            self.depth -= 1
            return node
        if self._string() is not None:
            return Node(start, self.pos)
        if match := _NUMBER.match(self.text, start):
            self.pos = match.end()
            return Node(start, self.pos)
        for word in _LITERALS:
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos)
        raise self.error(
            "expected a JSON value" if char else "the text ends where a value should be"
        )

    def _object(self) -> Node:
        start, members = self.pos, list[Member]()
        self.pos += 1
        while not self._closes("}", members[-1].comma if members else -1):
            key_at = self.pos
            key = self._string()
            if key is None:
                raise self.error("expected a member name in double quotes")
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.error("expected ':' after the member name")
            self.pos += 1
            members.append(Member(key, key_at, self.value()))
            members[-1].comma = self._comma()
        return Node(start, self.pos, members=members)

    def _string(self) -> str | None:
        """The string that starts here, decoded, with the scanner past it; None when none
        starts here. Decoded by the ``json`` module's scanner, in time and memory linear in
        its length (a regular expression's repeated group costs far more per character)."""
        if not self.text.startswith('"', self.pos):
            return None
        try:
            value, self.pos = _SCAN_STRING(self.text, self.pos + 1, True)
        except json.JSONDecodeError as err:
            self.pos = err.pos
            raise self.error(f"invalid string: {err.msg}") from None
        return value

    def _array(self) -> Node:
        start, items = self.pos, list[Node]()
        comma: int | None = -1
        self.pos += 1
        while not self._closes("]", comma):
            items.append(self.value())
            comma = self._comma()
        return Node(start, self.pos, items=items)

    def _comma(self) -> int | None:
        self.skip()
        if self.text.startswith(",", self.pos):
            self.pos += 1
            return self.pos - 1
        return None

    def _closes(self, closer: str, comma: int | None) -> bool:
        """Whether the container ends here (stepping past its closer). ``comma`` is the comma
        after the previous item (None: there was none; -1: there is no previous item); a closer
        right after a comma is a trailing comma, JSONC only."""
        self.skip()
        if self.text.startswith(closer, self.pos):
            if comma is not None and comma >= 0 and not self.jsonc:
                raise self.error("a trailing comma is not allowed in JSON")
            self.pos += 1
            return True
        if comma is None:
            raise self.error(f"expected ',' or '{closer}'")
        return False


def set_member(text: str, path: tuple[str, str], value: Any, *, jsonc: bool = False) -> str:
    """``text`` with ``value`` at ``root[path[0]][path[1]]`` (the outer object added when
    missing), the rest untouched. Raises ``ValueError`` when the root or ``root[path[0]]`` is
    not an object."""
    outer_key, key = path
    root = _object_root(text, jsonc)
    outer = root.member(outer_key)
    if outer is None:
        return _insert(text, root, outer_key, {key: value})
    if outer.value.members is None:
        raise ValueError(f'"{outer_key}" is not an object')
    found = outer.value.member(key)
    if found is None:
        return _insert(text, outer.value, key, value)
    indent = _line_indent(text, found.start)
    rendered = _render(value, indent, _unit(text, outer.value, found))
    return text[: found.value.start] + rendered + text[found.value.end :]


def get_member(text: str, path: tuple[str, str], *, jsonc: bool = False) -> Any:
    """The value at ``root[path[0]][path[1]]``, or None where there is none."""
    outer = _object_root(text, jsonc).member(path[0])
    if outer is None or outer.value.members is None:
        return None
    found = outer.value.member(path[1])
    return None if found is None else value_of(text, found.value)


def drop_member(text: str, path: tuple[str, str], *, jsonc: bool = False) -> str:
    """``text`` without ``root[path[0]][path[1]]`` (unchanged when there is none)."""
    outer = _object_root(text, jsonc).member(path[0])
    if outer is None or outer.value.members is None:
        return text
    holder = outer.value
    found = holder.member(path[1])
    if found is None:
        return text
    members = holder.members or []
    at = members.index(found)
    before = members[at - 1].comma if at > 0 else None
    if len(members) == 1 and not _without(text, holder, found).strip("{} \t\r\n"):
        return text[: holder.start] + "{}" + text[holder.end :]
    start, end = found.start, found.value.end if found.comma is None else found.comma + 1
    line_start = text.rfind("\n", 0, start) + 1
    line_end = len(text) if (cut := text.find("\n", end)) < 0 else cut + 1
    if text[line_start:start].strip() or text[end:line_end].strip():
        if found.comma is None and before is not None:  # inline and last: from the comma
            return text[:before] + text[found.value.end :]
        return text[:start] + text[end:].lstrip(" ")
    dropped = text[:line_start] + text[line_end:]  # the member has its line(s) to itself
    if found.comma is None and before is not None:  # the previous comma would trail
        dropped = dropped[:before] + dropped[before + 1 :]
    return dropped


def _without(text: str, holder: Node, member: Member) -> str:
    """The text of ``holder`` without ``member``."""
    end = member.value.end if member.comma is None else member.comma + 1
    return text[holder.start : member.start] + text[end : holder.end]


def _object_root(text: str, jsonc: bool) -> Node:
    root = parse(text, jsonc=jsonc)
    if root.members is None:
        raise ValueError("the file's top level is not a JSON object")
    return root


def _insert(text: str, obj: Node, key: str, value: Any) -> str:
    """``"key": value`` added as the last member of ``obj``, laid out like its siblings."""
    members = obj.members or []
    unit = _unit(text, obj, members[-1] if members else None)
    if not members:
        indent = _line_indent(text, obj.start)
        inner = text[obj.start + 1 : obj.end - 1]
        member = f"{json.dumps(key)}: {_render(value, indent + unit, unit)}"
        if inner.strip():  # comments only: keep them, add the member after them
            return text[: obj.end - 1] + f"{unit}{member}\n{indent}" + text[obj.end - 1 :]
        return text[: obj.start + 1] + f"\n{indent}{unit}{member}\n{indent}" + text[obj.end - 1 :]
    last = members[-1]
    indent = _line_indent(text, last.start)
    own_line = not text[text.rfind("\n", 0, last.start) + 1 : last.start].strip()
    member = f"{json.dumps(key)}: {_render(value, indent, unit)}"
    after = last.value.end if last.comma is None else last.comma + 1
    line_end = len(text) if (cut := text.find("\n", after)) < 0 else cut
    rest = text[after:line_end].strip()
    if own_line and (not rest or rest.startswith("//")):  # after the line's own comment
        after, member = line_end, f"\n{indent}{member}"
    else:
        member = f" {member}"
    if last.comma is not None:  # a trailing comma: the new member trails one too
        return text[:after] + member + "," + text[after:]
    end = last.value.end
    return text[:end] + "," + text[end:after] + member + text[after:]


def _line_indent(text: str, at: int) -> str:
    """The whitespace that opens the line of offset ``at``."""
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _unit(text: str, obj: Node, member: Member | None) -> str:
    """One level of indentation as the file writes it (two spaces when it cannot tell)."""
    if member is not None:
        outer, inner = _line_indent(text, obj.start), _line_indent(text, member.start)
        if inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer) :]
    return "  "


def _render(value: Any, indent: str, unit: str) -> str:
    """``value`` as indented JSON whose lines after the first start with ``indent``."""
    lines = json.dumps(value, indent=unit, ensure_ascii=False).split("\n")
    return "\n".join([lines[0], *(indent + line for line in lines[1:])])
