"""Long-term memory: notes the agent keeps across sessions, in SQLite with full-text search.

``open_memory(settings)`` opens the store (``data_dir/memory.db`` or ``[memory].db_path``),
``memory_tools(store)`` gives the model ``remember``, ``search_memory``, ``edit_memory`` and
``forget``. Search is FTS5 with BM25 ranking, or cosine similarity of embeddings when
``[memory].embedding_provider`` and ``embedding_model`` are set.
"""

from __future__ import annotations

from openheim.memory.db import Hit, Memory
from openheim.memory.embeddings import Embedder, HTTPEmbedder
from openheim.memory.setup import embedder_for, memory_db_path, open_memory
from openheim.memory.store import MemoryStore, Saved, SearchResult
from openheim.memory.tools import memory_tools

__all__ = [
    "Embedder",
    "HTTPEmbedder",
    "Hit",
    "Memory",
    "MemoryStore",
    "Saved",
    "SearchResult",
    "embedder_for",
    "memory_db_path",
    "memory_tools",
    "open_memory",
]
