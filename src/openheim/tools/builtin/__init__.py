"""The built-in tools.

``read_file``, ``write_file``, ``edit_file`` (files.py), ``list_dir``, ``glob`` (listing.py),
``search`` (search.py) and, only when the shell is allowed, ``execute_command`` (shell.py, which
is imported only then, or when the name is asked of this package). Every path goes through the
session's sandbox and is shown relative to the work dir.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openheim.tools.base import Tool, ToolSet
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.builtin.listing import glob, list_dir
from openheim.tools.builtin.search import search

if TYPE_CHECKING:
    from openheim.tools.builtin.shell import execute_command as execute_command


def builtin_tools(*, allow_shell: bool) -> ToolSet:
    """Every built-in tool, in a stable order; ``execute_command`` only when ``allow_shell``."""
    tools: list[Tool] = [read_file, write_file, edit_file, list_dir, glob, search]
    if allow_shell:
        from openheim.tools.builtin.shell import execute_command

        tools.append(execute_command)
    return ToolSet(tools)


def __getattr__(name: str) -> Any:
    if name != "execute_command":
        raise AttributeError(f"module 'openheim.tools.builtin' has no attribute {name!r}")
    from openheim.tools.builtin.shell import execute_command

    return execute_command


__all__ = [
    "builtin_tools",
    "edit_file",
    "execute_command",
    "glob",
    "list_dir",
    "read_file",
    "search",
    "write_file",
]
