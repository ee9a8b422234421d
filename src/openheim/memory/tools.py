"""The memory tools: ``remember``, ``search_memory``, ``edit_memory`` and ``forget``.

Memory changes only through these calls: nothing is stored, and nothing from memory reaches a
prompt, unless the model calls a tool. ``search_memory`` is read-only; the others write, so they
go through the approval gate like any other edit.
"""

from __future__ import annotations

from typing import Annotated

from openheim.errors import ToolError
from openheim.memory.db import Hit
from openheim.memory.store import MemoryStore, Saved, SearchResult
from openheim.tools.base import Tool, ToolKind
from openheim.tools.decorator import tool

MAX_MEMORY_CHARS = 4000
MAX_TAGS = 10
MAX_LIMIT = 50
_PREVIEW_CHARS = 80


def memory_tools(store: MemoryStore, *, top_k: int = 5) -> list[Tool]:
    """The four memory tools over ``store``; ``search_memory`` returns ``top_k`` hits by default."""

    @tool(kind=ToolKind.EDIT)
    async def remember(
        text: Annotated[str, "The note: one self-contained fact, readable without this chat"],
        tags: Annotated[list[str] | None, "Optional short labels, such as ['preference']"] = None,
    ) -> str:
        """Save a note to long-term memory, where later sessions can find it with search_memory.
        Store one fact per call (a preference, a decision, where something lives), and only what
        will still matter later."""
        saved = await store.remember(_checked_text(text), _checked_tags(tags))
        return _describe_saved("remembered", saved)

    @tool(read_only=True, kind=ToolKind.SEARCH)
    async def search_memory(
        query: Annotated[str, "What to look for, in words"],
        limit: Annotated[int | None, f"How many memories to return (1-{MAX_LIMIT})"] = None,
    ) -> str:
        """Search long-term memory for notes saved in this or earlier sessions. Returns matching
        memories with their ids (for edit_memory and forget), best match first."""
        if not query.strip():
            raise ToolError("the query is empty", hint="pass the words to search for")
        wanted = top_k if limit is None else limit
        if not 1 <= wanted <= MAX_LIMIT:
            raise ToolError(f"limit must be 1 to {MAX_LIMIT}, got {wanted}", hint="omit it")
        return _describe_search(query, await store.search(query, wanted))

    @tool(kind=ToolKind.EDIT)
    async def edit_memory(
        id: Annotated[int, "The memory's id, as shown by search_memory"],
        text: Annotated[str, "The memory's new text, replacing the old text entirely"],
    ) -> str:
        """Replace the text of one memory, for a fact that has changed."""
        saved = await store.edit(id, _checked_text(text))
        if saved is None:
            raise _unknown(id)
        return _describe_saved("updated", saved)

    @tool(kind=ToolKind.DELETE)
    async def forget(id: Annotated[int, "The memory's id, as shown by search_memory"]) -> str:
        """Delete one memory for good, for a note that is wrong or no longer wanted."""
        memory = await store.forget(id)
        if memory is None:
            raise _unknown(id)
        return f"forgot memory #{id}: {_preview(memory.text)}"

    return [remember, search_memory, edit_memory, forget]


def _checked_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise ToolError("the memory text is empty", hint="pass the fact to remember as text")
    if len(text) > MAX_MEMORY_CHARS:
        raise ToolError(
            f"the memory text has {len(text)} characters; at most {MAX_MEMORY_CHARS} are allowed",
            hint="store a short summary, or split it into separate facts",
        )
    return text


def _checked_tags(tags: list[str] | None) -> list[str]:
    cleaned = list(dict.fromkeys(" ".join(t.split()) for t in tags or () if t.strip()))
    if len(cleaned) > MAX_TAGS:
        raise ToolError(f"{len(cleaned)} tags given; at most {MAX_TAGS}", hint="use fewer tags")
    return cleaned


def _unknown(id_: int) -> ToolError:
    return ToolError(
        f"there is no memory #{id_}", hint="call search_memory to find the id of the memory"
    )


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _describe_saved(verb: str, saved: Saved) -> str:
    line = f"{verb} memory #{saved.memory.id}: {_preview(saved.memory.text)}"
    return f"{line}\nnote: {saved.note}" if saved.note else line


def _describe_search(query: str, result: SearchResult) -> str:
    how = "by meaning, most similar first" if result.semantic else "by keywords, best first"
    found = len(result.hits)
    if found:
        count = "1 memory matches" if found == 1 else f"{found} memories match"
        lines = [f"{count} {query!r} ({how}):"]
    else:
        lines = [f"no memories match {query!r}"]
    lines.extend(_describe_hit(hit, result.semantic) for hit in result.hits)
    if result.note:
        lines.append(f"note: {result.note}")
    return "\n".join(lines)


def _describe_hit(hit: Hit, semantic: bool) -> str:
    """One hit; in a semantic search a keyword hit is a memory stored without a vector."""
    memory = hit.memory
    tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
    if hit.method == "semantic":
        how = f"similarity {hit.score:.2f}"
    else:
        how = "keyword match; it has no vector" if semantic else "keyword match"
    text = memory.text.replace("\n", "\n    ")
    return f"#{memory.id}{tags} ({how}; updated {memory.updated}) {text}"
