"""Frontmatter of Markdown files: a ``+++`` TOML or ``---`` YAML block at the top, then the body.

Skills, subagent profiles and Agent Skills' ``SKILL.md`` keep their name and description there.
YAML is read without a YAML library, as a small subset: top-level ``key: value`` lines whose value
is a plain, single- or double-quoted scalar, or a ``|`` / ``>`` block scalar; indented lines
continue the value above them (a nested table is kept as folded text, which callers ignore);
blank lines and ``#`` comments are skipped. Anything else is a ``FrontmatterError``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass

from openheim.formats import tomlfile

_FENCES = ("+++", "---")
_KEY = re.compile(r"([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?")
_BLOCK = re.compile(r"[|>][+-]?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/", " ": " "}


class FrontmatterError(ValueError):
    """The frontmatter block is malformed; the message names the line and the problem."""


@dataclass(frozen=True)
class Document:
    """A Markdown file split into its frontmatter values and the text after the block."""

    meta: Mapping[str, object]
    body: str


def split_frontmatter(text: str) -> Document:
    """Split ``text``; without an opening fence on line one (or a closing one) all is body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    fence = lines[0].strip() if lines else ""
    if fence not in _FENCES:
        return Document({}, text)
    for index in range(1, len(lines)):
        if lines[index].strip() == fence:
            block = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            meta = _parse_toml(block) if fence == "+++" else parse_yaml_subset(block)
            return Document(meta, body)
    return Document({}, text)  # a lone leading rule, not a frontmatter block


def text_field(meta: Mapping[str, object], key: str) -> str | None:
    """``meta[key]`` when it is a non-blank string, with surrounding whitespace removed."""
    value = meta.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _parse_toml(block: str) -> dict[str, object]:
    try:
        return tomlfile.loads(block)
    except tomllib.TOMLDecodeError as err:
        raise FrontmatterError(f"invalid TOML frontmatter: {err}") from None
    except tomlfile.TooDeep as err:
        raise FrontmatterError(f"TOML frontmatter: {err}") from None


def parse_yaml_subset(block: str) -> dict[str, str]:
    """Top-level ``key: value`` pairs of a YAML block (see the module docstring)."""
    entries: list[tuple[str, str, list[str]]] = []
    for number, line in enumerate(block.splitlines(), 1):
        if not line.strip() or line[0] in " \t":
            if entries:
                entries[-1][2].append(line)
            elif line.strip():
                raise FrontmatterError(f"line {number}: indented line before any key")
            continue
        if line.startswith("#"):
            continue
        match = _KEY.fullmatch(line.rstrip())
        if match is None:
            raise FrontmatterError(f"line {number}: expected 'key: value', got {line.strip()!r}")
        entries.append((match.group(1), (match.group(2) or "").strip(), []))
    try:
        return {key: _value(first, more) for key, first, more in entries}
    except FrontmatterError as err:
        raise FrontmatterError(f"YAML frontmatter: {err}") from None


def _value(first: str, more: list[str]) -> str:
    """One value: the text after ``key:`` and the indented or blank lines that follow it."""
    if _BLOCK.fullmatch(first):
        return _block_scalar(first[0], more)
    text = " ".join(part for part in [first, *(line.strip() for line in more)] if part)
    if text[:1] in ("'", '"'):
        return _quoted(text)
    return _strip_comment(text)


def _block_scalar(style: str, lines: list[str]) -> str:
    """``|`` keeps line breaks, ``>`` folds lines into paragraphs; indentation is removed."""
    content = [line for line in lines if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in content), default=0)
    kept = [line[indent:].rstrip() for line in lines]
    if style == "|":
        return "\n".join(kept).strip("\n")
    paragraphs = "\n".join(kept).strip("\n").split("\n\n")
    return "\n".join(" ".join(p.split("\n")) for p in paragraphs)


def _strip_comment(text: str) -> str:
    cut = text.find(" #")
    return (text if cut < 0 else text[:cut]).strip()


def _quoted(text: str) -> str:
    """A single- or double-quoted scalar; only a comment may follow the closing quote."""
    quote, out, index = text[0], [], 1
    while index < len(text):
        char = text[index]
        if char == quote and quote == "'" and text[index + 1 : index + 2] == "'":
            out.append("'")
            index += 2
        elif char == quote:
            rest = text[index + 1 :].strip()
            if rest and not rest.startswith("#"):
                raise FrontmatterError(f"unexpected text after a quoted value: {rest!r}")
            return "".join(out)
        elif char == "\\" and quote == '"':
            decoded, index = _escape(text, index)
            out.append(decoded)
        else:
            out.append(char)
            index += 1
    raise FrontmatterError(f"unterminated quoted value: {text!r}")


def _escape(text: str, index: int) -> tuple[str, int]:
    """Decode the escape at ``text[index]`` (a backslash); return it and the next index."""
    code = text[index + 1 : index + 2]
    if code in _ESCAPES:
        return _ESCAPES[code], index + 2
    if code == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[index + 2 : index + 6]):
        return chr(int(text[index + 2 : index + 6], 16)), index + 6
    raise FrontmatterError(f"unknown escape '\\{code}' in a double-quoted value")
