"""The built-in tools: files, listing, search and (when allowed) the shell."""

from __future__ import annotations

from openheim.tools.base import ToolSet
from openheim.tools.builtin.files import edit_file, read_file, write_file
from openheim.tools.builtin.listing import glob, list_dir
from openheim.tools.builtin.search import search
from openheim.tools.builtin.shell import execute_command


def builtin_tools(*, allow_shell: bool) -> ToolSet:
    """Every built-in tool; ``execute_command`` only when ``allow_shell`` is on."""
    tools = [read_file, write_file, edit_file, list_dir, glob, search]
    if allow_shell:
        tools.append(execute_command)
    return ToolSet(tools)
