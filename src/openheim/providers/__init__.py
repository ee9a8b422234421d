"""Providers: a lazy registry from provider kind to the module that implements it.

Nothing here imports a provider module, httpx or any other heavy library; ``create_provider``
imports exactly the module its kind needs, at the moment it is needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from openheim.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from openheim.providers.base import Provider, ProviderSettings

Factory = Callable[["ProviderSettings", "httpx.AsyncClient | None"], "Provider"]

_MODULES: dict[str, str] = {
    "anthropic": "openheim.providers.anthropic",
    "openai": "openheim.providers.openai_chat",
    "openai_compatible": "openheim.providers.openai_chat",
    "gemini": "openheim.providers.gemini",
    "llama_cpp": "openheim.providers.llama_cpp",
    "llama_server": "openheim.providers.llama_server",
}
_FACTORIES: dict[str, Factory] = {}


def register(kind: str, factory: Factory) -> None:
    """Add (or replace) a provider kind, e.g. from a plugin or a test."""
    _FACTORIES[kind] = factory


def known_kinds() -> list[str]:
    return sorted({*_MODULES, *_FACTORIES})


def create_provider(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> Provider:
    """Build the provider for ``settings.kind``, importing its module on first use."""
    factory = _FACTORIES.get(settings.kind)
    if factory is None:
        module_name = _MODULES.get(settings.kind)
        if module_name is None:
            raise ConfigError(
                f"provider {settings.name!r} has unknown kind {settings.kind!r}",
                hint=f"set kind to one of: {', '.join(known_kinds())}",
            )
        factory = importlib.import_module(module_name).create
        _FACTORIES[settings.kind] = factory
    return factory(settings, http_client)
