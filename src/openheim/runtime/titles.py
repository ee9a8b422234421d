"""Plain-words titles of tool calls ("Write notes.txt", "Run `make test`") from their arguments.

One titler for every surface: an editor's tool call title (ACP), the approval question a person
reads ("Allow openheim to write notes.txt?", ``runtime.approvals``). Titles are built from the
arguments alone, without touching the file system.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

Titler: TypeAlias = Callable[[Mapping[str, Any], Path], str | None]

MAX_TITLE_ARG = 80
"""Longest command or URL shown in a title; a longer one is cut and ends with "…"."""
_MCP_SEPARATOR = "__"


def str_arg(arguments: Mapping[str, Any], key: str) -> str | None:
    """A string argument with some non-blank text, or None (missing, blank or not a string)."""
    value = arguments.get(key)
    return value if isinstance(value, str) and value.strip() else None


def absolute_path(raw: str, cwd: Path) -> Path:
    """``raw`` made absolute against ``cwd`` and normalised lexically (no file system access)."""
    return Path(os.path.normpath(cwd / Path(raw).expanduser()))


def _shown(raw: str, cwd: Path) -> str:
    """A path as a title shows it: relative to ``cwd`` when inside it, else absolute."""
    path, base = absolute_path(raw, cwd), absolute_path(".", cwd)
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)


def _clip(text: str) -> str:
    """The first line of non-blank ``text``, cut to ``MAX_TITLE_ARG`` characters."""
    stripped = text.strip()
    cut = stripped.splitlines()[0][:MAX_TITLE_ARG]
    return cut if cut == stripped else f"{cut.rstrip()}…"


def _path_title(verb: str, folder: bool = False) -> Titler:
    """A title such as "Read notes.txt" from the ``path`` argument; a folder ("List src/")
    defaults to the working directory."""

    def title(arguments: Mapping[str, Any], cwd: Path) -> str | None:
        raw = str_arg(arguments, "path") or ("." if folder else None)
        if raw is None:
            return None
        shown = _shown(raw, cwd)
        return f"{verb} {shown.removesuffix('/')}/" if folder else f"{verb} {shown}"

    return title


def _pattern_title(verb: str) -> Titler:
    """A title such as "Search 'TODO' in src/" from the ``pattern`` and ``path`` arguments."""

    def title(arguments: Mapping[str, Any], cwd: Path) -> str | None:
        pattern = str_arg(arguments, "pattern")
        if pattern is None:
            return None
        shown = _shown(str_arg(arguments, "path") or ".", cwd)
        return f"{verb} '{pattern}'" + ("" if shown == "." else f" in {shown}/")

    return title


def _arg_title(template: str, key: str) -> Titler:
    """A title that shows one string argument, clipped, through ``template``."""

    def title(arguments: Mapping[str, Any], cwd: Path) -> str | None:
        value = str_arg(arguments, key)
        return None if value is None else template.format(_clip(value))

    return title


_TITLES: dict[str, Titler] = {
    "read_file": _path_title("Read"),
    "write_file": _path_title("Write"),
    "edit_file": _path_title("Edit"),
    "list_dir": _path_title("List", folder=True),
    "search": _pattern_title("Search"),
    "glob": _pattern_title("Find"),
    "execute_command": _arg_title("Run `{}`", "command"),
    "web_fetch": _arg_title("Fetch {}", "url"),
    "delegate_task": _arg_title("Delegate to {}", "agent"),
}


def tool_action(name: str, arguments: Mapping[str, Any], cwd: Path) -> str | None:
    """What a call of a built-in tool does, in words ("Write notes.txt"); None when the tool
    is not one we know or its arguments say nothing usable."""
    make = _TITLES.get(name)
    return None if make is None else make(arguments, cwd)


def tool_title(name: str, arguments: Mapping[str, Any], cwd: Path) -> str:
    """A human title for a tool call; the tool's name when its arguments say nothing usable."""
    action = tool_action(name, arguments, cwd)
    if action is not None:
        return action
    server, sep, tool = name.partition(_MCP_SEPARATOR)
    return f"{server}: {tool}" if sep and server and tool and name not in _TITLES else name
