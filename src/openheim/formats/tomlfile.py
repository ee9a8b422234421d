"""Reading TOML: a file into a typed record, with errors that name the file, the key and a fix;
and any TOML text (a config file, a skill's or a profile's frontmatter) with its nesting bounded.

``tomllib`` parses nested arrays and inline tables by recursion, so text nested some hundreds
deep ends in a ``RecursionError`` (a cloned project's skill could stop every command in its
folder). ``loads`` scans the text once first (``check_nesting``: strings and comments skipped)
and refuses nesting deeper than ``MAX_DEPTH``; it refuses a parsed table nested deeper too,
since dotted keys (``a.b.c = 1``, ``[a.b.c]``) nest tables without brackets.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from openheim.errors import ConfigError
from openheim.formats.typed import TypeCheckError, from_mapping

T = TypeVar("T")

MAX_DEPTH = 64
"""The deepest nesting of arrays and tables read (a config needs a handful)."""

_NEXT = re.compile(r"""[\[\]{}"'#\n]""")
_STRINGS = {  # from an opening quote to the closing one (or the end of an unclosed string)
    '"""': re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*(?:"{3,5})?'),
    "'''": re.compile(r"'''(?:[^']|'(?!''))*(?:'{3,5})?"),
    '"': re.compile(r'"(?:[^"\\\n]|\\.)*"?'),
    "'": re.compile(r"'[^'\n]*'?"),
}


class TooDeep(ValueError):
    """TOML nested deeper than ``MAX_DEPTH``; the message says where."""


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads`` of ``text`` with its nesting bounded before and after the parse:
    ``TooDeep`` past ``MAX_DEPTH``, ``TOMLDecodeError`` for bad syntax."""
    check_nesting(text)
    table = tomllib.loads(text)
    if _depth(table) > MAX_DEPTH:
        raise TooDeep(f"keys nest tables deeper than {MAX_DEPTH} levels")
    return table


def check_nesting(text: str, limit: int = MAX_DEPTH) -> None:
    """``TooDeep`` when ``[`` and ``{`` outside strings and comments nest deeper than
    ``limit``: one pass, no recursion, so any text is checked in linear time."""
    depth, line, index = 0, 1, 0
    while (found := _NEXT.search(text, index)) is not None:
        char, index = found.group(), found.end()
        if char in "[{":
            depth += 1
            if depth > limit:
                raise TooDeep(f"line {line}: arrays or tables nested deeper than {limit} levels")
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "\n":
            line += 1
        elif char == "#":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
        else:
            start = found.start()
            quoted = _STRINGS.get(text[start : start + 3], _STRINGS[char]).match(text, start)
            assert quoted is not None  # every pattern matches its opening quote alone
            line += quoted.group().count("\n")
            index = quoted.end()


def _depth(table: Mapping[str, Any]) -> int:
    """How deep tables and arrays nest in a parsed table (``x = [1]``: 1), walked without
    recursion."""
    deepest, todo = 0, [(table, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, Mapping | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, Mapping) else item
            todo.extend((child, level + 1) for child in children)
    return deepest


def read_toml(path: Path) -> dict[str, Any]:
    """The file's top-level table; a ConfigError for unreadable files, text that is not UTF-8,
    bad syntax and nesting deeper than ``MAX_DEPTH``."""
    try:
        with path.open("rb") as fh:
            return loads(fh.read().decode("utf-8"))
    except TooDeep as err:
        raise ConfigError(f"{path}: {err}", hint="use fewer nested arrays or tables") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(
            f"{path}: invalid TOML: {err}", hint="fix the syntax at that line"
        ) from None
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {err.start + 1}, line {line})",
            hint="save the file as UTF-8 text; config files are TOML",
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path} is a folder, not a file", hint="move the folder away or put a file there"
        ) from None
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(f"cannot read {path}: {reason}", hint="check the file") from None


def typed_table(path: Path, raw: dict[str, Any], cls: type[T], hint: str) -> T:
    """``raw`` checked against ``cls``; a ConfigError naming the key and the nearest valid one
    (or ``hint`` when there is no near key)."""
    try:
        return from_mapping(cls, raw)
    except TypeCheckError as err:
        near = f"did you mean {err.suggestion!r}?" if err.suggestion else hint
        raise ConfigError(f"{path}: {err.path}: {err.problem}", hint=near) from None
