"""Tools as a small model sees them: the file tools first, the rest behind ``more_tools``."""

from __future__ import annotations

from openheim.messages import ToolUseBlock
from openheim.tools.base import BoundCall, ToolContext, ToolSet
from openheim.tools.builtin import builtin_tools
from openheim.tools.compact import (
    MAX_BRIEF,
    MORE_TOOLS,
    CompactToolSet,
    bare_schema,
    brief,
    compact_spec,
)
from openheim.tools.decorator import tool


@tool(read_only=True)
def recall(query: str) -> str:
    """Search long-term memory for notes. Returns the best matches first.

    Args:
        query: What to look for, in words
    """
    return f"nothing about {query}"


def compact_set() -> CompactToolSet:
    return CompactToolSet([*builtin_tools(allow_shell=False), recall])


def test_brief_is_the_first_clause() -> None:
    assert brief("Read a text file. One call shows at most 100 KiB.") == "Read a text file"
    assert brief("List one directory (not recursive): one entry per line") == (
        "List one directory (not recursive)"
    )
    assert brief("Replace text; old must match") == "Replace text"
    assert brief("No stop at all") == "No stop at all"
    assert brief("Version 1.5 of the file format.") == "Version 1.5 of the file format"
    long = brief("word " * 100)
    assert len(long) == MAX_BRIEF and long.endswith("…")


def test_bare_schema_drops_notes_but_keeps_property_names() -> None:
    schema = {
        "type": "object",
        "title": "Args",
        "properties": {
            "description": {"type": "string", "description": "a property named description"},
            "tags": {"type": "array", "items": {"type": "string", "title": "Tag"}, "default": []},
        },
        "required": ["description"],
        "additionalProperties": False,
    }
    assert bare_schema(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["description"],
        "additionalProperties": False,
    }


def test_the_file_tools_come_first_and_the_rest_behind_more_tools() -> None:
    tools = compact_set()
    names = [s.name for s in tools.specs]
    assert names == [
        "read_file",
        "list_dir",
        "glob",
        "search",
        "edit_file",
        "write_file",
        MORE_TOOLS,
    ]
    more = tools.specs[-1]
    assert more.description == "Offer more tools: recall"
    assert all("description" not in str(s.parameters) for s in tools.specs[:-1])
    full = ToolSet(builtin_tools(allow_shell=False)).specs
    assert sum(len(str(s)) for s in tools.specs) < sum(len(str(s)) for s in full) / 2


def test_more_tools_offers_hidden_tools_from_the_next_call(ctx: ToolContext) -> None:
    tools = compact_set()
    found, unknown = tools.offer(["recall", "no_such_tool"])
    assert (found, unknown) == (["recall"], ["no_such_tool"])
    names = [s.name for s in tools.specs]
    assert names[-2:] == ["recall", MORE_TOOLS]
    assert tools.specs[-1].description == "Every tool is offered already."


async def test_more_tools_called_by_the_model(ctx: ToolContext) -> None:
    tools = compact_set()
    bound = tools.bind(ToolUseBlock("c1", MORE_TOOLS, {"names": ["recall", "bogus"]}))
    assert isinstance(bound, BoundCall) and bound.read_only
    output = await bound.run(ctx)
    assert output.content == "Now offered: recall. Not tools: bogus."
    assert "recall" in [s.name for s in tools.specs]


async def test_a_hidden_tool_called_by_name_still_runs(ctx: ToolContext) -> None:
    tools = compact_set()
    bound = tools.bind(ToolUseBlock("c1", "recall", {"query": "x"}))
    assert isinstance(bound, BoundCall)
    assert (await bound.run(ctx)).content == "nothing about x"


def test_no_more_tools_when_nothing_is_hidden() -> None:
    tools = CompactToolSet(builtin_tools(allow_shell=False))
    assert MORE_TOOLS not in tools
    assert compact_spec(tools.specs[0]).description == tools.specs[0].description
