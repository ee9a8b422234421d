"""Tools as a small model sees them: few at first, each described in a line.

A small model reads every tool description on every call, and a long list both costs prompt
time and confuses it. ``CompactToolSet`` offers the tools named ``first`` (the file tools a
task needs most) and hides the rest behind one more tool, ``more_tools``, whose description
names them: calling it offers the named ones from the next model call on. Every spec is
compact: the description's first clause, and a schema without descriptions, titles or examples.
A hidden tool is still the session's tool: a call to it by name is bound and run like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from openheim.providers.base import ToolSpec
from openheim.tools.base import Tool, ToolKind, ToolSet
from openheim.tools.decorator import tool

MORE_TOOLS = "more_tools"
FIRST_TOOLS = (
    "read_file",
    "list_dir",
    "glob",
    "search",
    "edit_file",
    "write_file",
    "preview_edit_file",
    "preview_write_file",
    "apply_file_change",
    "execute_command",
)
"""The tools a small model is offered first, in this order (those the session has)."""
_SCHEMA_NOTES = frozenset({"description", "title", "examples", "default", "$comment"})
_FIRST_CLAUSE = re.compile(r"^(.+?)(?:[.:;](?:\s|$)|$)", re.DOTALL)
MAX_BRIEF = 120


def brief(description: str) -> str:
    """The first clause of a description (up to its first ``.``, ``:`` or ``;``), at most
    ``MAX_BRIEF`` characters."""
    text = " ".join(description.split())
    match = _FIRST_CLAUSE.match(text)
    clause = match.group(1).strip() if match else text
    return clause if len(clause) <= MAX_BRIEF else clause[: MAX_BRIEF - 1].rstrip() + "…"


def bare_schema(schema: Any) -> Any:
    """``schema`` without its notes for people (descriptions, titles, examples, defaults); the
    names under ``properties`` are kept, whatever they are called."""
    if isinstance(schema, list):
        return [bare_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_NOTES:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: bare_schema(sub) for name, sub in value.items()}
        else:
            out[key] = bare_schema(value)
    return out


def compact_spec(spec: ToolSpec) -> ToolSpec:
    """The spec with a one-clause description and a bare schema."""
    return ToolSpec(spec.name, brief(spec.description), bare_schema(spec.parameters))


class CompactToolSet(ToolSet):
    """A tool set that offers ``first`` (and ``more_tools`` for the rest) with compact specs."""

    def __init__(self, tools: Iterable[Tool], first: Sequence[str] = FIRST_TOOLS) -> None:
        super().__init__(tools)
        self._offered = [name for name in first if name in self]
        if self.hidden:
            self.add(_more_tools(self))
            self._offered.append(MORE_TOOLS)

    @property
    def hidden(self) -> list[str]:
        """The tools not offered yet, in the set's order."""
        return [n for n in self.names if n not in self._offered and n != MORE_TOOLS]

    def offer(self, names: Sequence[str]) -> tuple[list[str], list[str]]:
        """Offer ``names`` from now on: the names now offered, and those that are no tool."""
        hidden = self.hidden
        found = [n for n in names if n in hidden]
        self._offered[-1:-1] = found  # before more_tools, which stays last
        return found, [n for n in names if n not in self]

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        specs = tuple(compact_spec(t.spec) for n in self._offered if (t := self.get(n)))
        return tuple(_described(s, self.hidden) if s.name == MORE_TOOLS else s for s in specs)


def _described(spec: ToolSpec, hidden: Sequence[str]) -> ToolSpec:
    """``more_tools``'s spec, naming the tools it can offer."""
    if not hidden:
        return ToolSpec(spec.name, "Every tool is offered already.", spec.parameters)
    return ToolSpec(spec.name, f"Offer more tools: {', '.join(hidden)}", spec.parameters)


def _more_tools(tools: CompactToolSet) -> Tool:
    """The tool that offers hidden tools to the model."""

    @tool(name=MORE_TOOLS, read_only=True, kind=ToolKind.THINK)
    def more_tools(names: Annotated[list[str], "Names of the tools to offer"]) -> str:
        """Offer more tools."""
        found, unknown = tools.offer(names)
        lines = [f"Now offered: {', '.join(found)}." if found else "No tool was added."]
        if unknown:
            lines.append(f"Not tools: {', '.join(unknown)}.")
        if rest := tools.hidden:
            lines.append(f"Still hidden: {', '.join(rest)}.")
        return " ".join(lines)

    return more_tools
