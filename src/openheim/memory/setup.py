"""Memory from settings: where the database lives and which embedder, if any, to use.

``[memory].db_path`` (``~`` expanded; a relative path is under the data dir) defaults to
``data_dir/memory.db``; with a ``store_url`` memory is kept in that PostgreSQL store instead,
shared by every machine on it. Embeddings are on when both ``embedding_provider`` (a provider
name, as in ``[providers.NAME]`` or a built-in one) and ``embedding_model`` are set; that
provider's ``api_base`` and key are used. OpenAI-compatible and Gemini providers can embed;
others cannot.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.errors import ConfigError
from openheim.memory.embeddings import HTTPEmbedder, Wire
from openheim.memory.store import MemoryStore

DEFAULT_DB_NAME = "memory.db"
_WIRES: dict[str, Wire] = {"openai": "openai", "openai_compatible": "openai", "gemini": "gemini"}


def memory_db_path(settings: Settings) -> Path:
    """The memory database file of ``settings``."""
    raw = settings.memory.db_path
    if not raw:
        return settings.data_dir / DEFAULT_DB_NAME
    return settings.data_dir / Path(raw).expanduser()


def embedder_for(settings: Settings, env: Mapping[str, str] | None = None) -> HTTPEmbedder | None:
    """The configured embedder; None when embeddings are off; ConfigError saying what to fix."""
    provider, model = settings.memory.embedding_provider, settings.memory.embedding_model
    if not provider and not model:
        return None
    if not provider or not model:
        given, missing = (
            ("embedding_provider", "embedding_model")
            if provider
            else ("embedding_model", "embedding_provider")
        )
        raise ConfigError(
            f"[memory] sets {given} but not {missing}",
            hint="set both to search memory by meaning, or neither for keyword search",
        )
    chosen = resolve_provider(settings, env, name=provider)
    wire = _WIRES.get(chosen.kind)
    if wire is None:
        raise ConfigError(
            f"[memory].embedding_provider {provider!r} is a {chosen.kind} provider, "
            "which has no embeddings endpoint",
            hint="use an OpenAI-compatible or Gemini provider for embeddings",
        )
    return HTTPEmbedder(
        chosen.api_base,
        model,
        chosen.api_key,
        wire,
        provider=chosen.name,
        timeout=chosen.timeout_secs,
    )


def open_memory(settings: Settings, env: Mapping[str, str] | None = None) -> MemoryStore:
    """The memory store of ``settings`` (close it when the session ends)."""
    return MemoryStore(
        memory_db_path(settings), embedder=embedder_for(settings, env), url=settings.store_url
    )
