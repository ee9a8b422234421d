"""The memory tools, called the way the agent loop calls them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openheim.errors import ToolError
from openheim.memory import HTTPEmbedder, MemoryStore, memory_tools
from openheim.tools.base import Tool, ToolContext, ToolKind
from tests.memory.conftest import EmbedServer


def by_name(store: MemoryStore, top_k: int = 5) -> dict[str, Tool]:
    return {t.name: t for t in memory_tools(store, top_k=top_k)}


async def call(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    output = await tool.call(tool.parse(arguments), ctx)
    assert not output.is_error
    return output.content


def test_capabilities_and_schemas(store: MemoryStore) -> None:
    tools = by_name(store)
    assert list(tools) == ["remember", "search_memory", "edit_memory", "forget"]
    caps = {name: (t.capabilities.read_only, t.capabilities.kind) for name, t in tools.items()}
    assert caps == {
        "remember": (False, ToolKind.EDIT),
        "search_memory": (True, ToolKind.SEARCH),
        "edit_memory": (False, ToolKind.EDIT),
        "forget": (False, ToolKind.DELETE),
    }
    assert tools["remember"].parameters["required"] == ["text"]
    assert tools["remember"].parameters["properties"]["tags"]["type"] == "array"
    assert tools["search_memory"].parameters["required"] == ["query"]
    assert tools["edit_memory"].parameters["required"] == ["id", "text"]
    assert tools["forget"].parameters["required"] == ["id"]


async def test_remember_search_edit_forget(store: MemoryStore, ctx: ToolContext) -> None:
    tools = by_name(store)
    said = await call(tools["remember"], ctx, text="  The user prefers tabs.  ", tags=["style"])
    assert said == "remembered memory #1: The user prefers tabs."
    found = await call(tools["search_memory"], ctx, query="tabs")
    lines = found.splitlines()
    assert lines[0] == "1 memory matches 'tabs' (by keywords, best first):"
    assert lines[1].startswith("#1 [style] (keyword match; updated ")
    assert lines[1].endswith(") The user prefers tabs.")
    edited = await call(tools["edit_memory"], ctx, id=1, text="The user prefers spaces.")
    assert edited == "updated memory #1: The user prefers spaces."
    assert await call(tools["search_memory"], ctx, query="tabs") == "no memories match 'tabs'"
    assert await call(tools["forget"], ctx, id=1) == "forgot memory #1: The user prefers spaces."
    assert "no memories match" in await call(tools["search_memory"], ctx, query="spaces")


async def test_search_limit_defaults_to_top_k(store: MemoryStore, ctx: ToolContext) -> None:
    tools = by_name(store, top_k=2)
    for n in range(4):
        await call(tools["remember"], ctx, text=f"deploy note {n}")
    default = await call(tools["search_memory"], ctx, query="deploy")
    assert default.splitlines()[0].startswith("2 memories match")
    wider = await call(tools["search_memory"], ctx, query="deploy", limit=4)
    assert wider.splitlines()[0].startswith("4 memories match")


@pytest.mark.parametrize(
    ("tool", "arguments", "problem"),
    [
        ("remember", {"text": "   "}, "the memory text is empty"),
        ("remember", {"text": "x" * 5000}, "at most 4000 are allowed"),
        ("remember", {"text": "x", "tags": [f"t{n}" for n in range(11)]}, "at most 10"),
        ("search_memory", {"query": " "}, "the query is empty"),
        ("search_memory", {"query": "x", "limit": 0}, "limit must be 1 to 50"),
        ("search_memory", {"query": "x", "limit": 51}, "limit must be 1 to 50"),
        ("edit_memory", {"id": 42, "text": "new"}, "there is no memory #42"),
        ("forget", {"id": 42}, "there is no memory #42"),
    ],
)
async def test_bad_calls_are_tool_errors(
    store: MemoryStore, ctx: ToolContext, tool: str, arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ToolError, match=problem):
        await call(by_name(store)[tool], ctx, **arguments)


async def test_multiline_memories_stay_readable(store: MemoryStore, ctx: ToolContext) -> None:
    tools = by_name(store)
    await call(tools["remember"], ctx, text="steps:\n1. build\n2. ship")
    found = await call(tools["search_memory"], ctx, query="build")
    assert found.endswith(") steps:\n    1. build\n    2. ship")


async def test_the_fallback_note_reaches_the_model(
    tmp_path: Path, ctx: ToolContext, embed_server: EmbedServer
) -> None:
    embed_server.status = 500
    embedder = HTTPEmbedder(f"{embed_server.url}/v1", "m")
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        tools = by_name(store)
        said = await call(tools["remember"], ctx, text="release on fridays")
        found = await call(tools["search_memory"], ctx, query="release")
    assert said.startswith("remembered memory #1: release on fridays\nnote: embedding failed")
    assert "(by keywords, best first)" in found
    assert found.splitlines()[-1].startswith("note: embedding the query failed")


async def test_semantic_results_say_so(
    tmp_path: Path, ctx: ToolContext, embed_server: EmbedServer
) -> None:
    embed_server.vectors.update({"cats purr": [1.0, 0.0], "kitten": [1.0, 0.1]})
    embedder = HTTPEmbedder(f"{embed_server.url}/v1", "m")
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        tools = by_name(store)
        await call(tools["remember"], ctx, text="cats purr")
        found = await call(tools["search_memory"], ctx, query="kitten")
    assert found.splitlines()[0] == "1 memory matches 'kitten' (by meaning, most similar first):"
    assert found.splitlines()[1].startswith("#1 (similarity 1.00; updated ")


async def test_memories_without_a_vector_are_marked_in_semantic_results(
    tmp_path: Path, ctx: ToolContext, embed_server: EmbedServer
) -> None:
    embed_server.vectors.update({"cats purr": [1.0, 0.0], "kitten": [1.0, 0.1]})
    embedder = HTTPEmbedder(f"{embed_server.url}/v1", "m")
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        tools = by_name(store)
        embed_server.status = 500
        await call(tools["remember"], ctx, text="the kitten sleeps")
        embed_server.status = 200
        await call(tools["remember"], ctx, text="cats purr")
        lines = (await call(tools["search_memory"], ctx, query="kitten")).splitlines()
    assert lines[0] == "2 memories match 'kitten' (by meaning, most similar first):"
    assert lines[1].startswith("#2 (similarity 1.00; updated ")
    assert lines[2].startswith("#1 (keyword match; it has no vector; updated ")
    assert lines[2].endswith(") the kitten sleeps")
