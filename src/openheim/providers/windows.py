"""Context windows: how many tokens a provider's model takes, known in this one place.

The context fitter trims requests to it, and surfaces show how full it is (ACP's
``usage_update``). In order:

1. the provider's configured ``context_window``, else a local model's ``n_ctx``, else for a
   local model the context its provider loads it with (``fitting_context``: the trained
   context the GGUF header gives, limited by memory), so SmolLM2 says 8k, not 128k;
2. the known-models table: the longest entry the model name starts with, compared without case
   and without a ``vendor/`` prefix (``openai/gpt-4.1-mini`` is ``gpt-4.1``);
3. the usual window of the provider's kind (``anthropic``, ``gemini``, ``openai``);
4. ``DEFAULT_CONTEXT_WINDOW``.

A guess that is too large costs one refused request (the fitter trims and sends again when the
provider says the prompt is too long); one that is too small would leave context out for
nothing, so unknown models get a generous default and a smaller model should say its own size
with ``context_window``.
"""

from __future__ import annotations

import functools
from pathlib import Path

from openheim.providers.base import ProviderSettings
from openheim.providers.local_models import find_model, fitting_context

DEFAULT_CONTEXT_WINDOW = 128_000
"""Tokens assumed for a model that is neither configured nor known."""

KNOWN_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "gemini-": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gpt-3.5-turbo": 16_385,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}
"""Model-name prefixes and their context windows, in tokens."""

KIND_WINDOWS: dict[str, int] = {"anthropic": 200_000, "gemini": 1_048_576, "openai": 128_000}
"""The usual window of a provider kind's models, for a model the table does not know."""

GGUF_KINDS = frozenset({"llama_cpp", "llama_server"})
"""The kinds that run a local GGUF file, whose header says its context."""


def context_window(settings: ProviderSettings, model: str | None = None) -> int:
    """The context window, in tokens, of ``model`` (default: the settings' own model) on the
    provider ``settings`` describe."""
    configured = settings.context_window or settings.n_ctx
    if configured:
        return configured
    local = local_context(settings) if settings.kind in GGUF_KINDS else None
    if local:
        return local
    name = (model or settings.model).rsplit("/", 1)[-1].lower()
    known = [prefix for prefix in KNOWN_WINDOWS if name.startswith(prefix)]
    if known:
        return KNOWN_WINDOWS[max(known, key=len)]
    return KIND_WINDOWS.get(settings.kind, DEFAULT_CONTEXT_WINDOW)


def local_context(settings: ProviderSettings) -> int | None:
    """The context a local model runs with when ``n_ctx`` is unset, found as its provider finds
    it (``model_path``, else ``model``); None when the file is missing or no GGUF file."""
    path = find_model(settings.model_path or settings.model, settings.data_dir)
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    return _file_context(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _file_context(path: str, size: int, mtime_ns: int) -> int | None:
    """``fitting_context`` of one version of a file (size and time are the cache key): the
    header is read once, not on every request the context fitter sizes."""
    try:
        return fitting_context(Path(path))
    except (OSError, ValueError):
        return None
