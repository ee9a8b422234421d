"""Providers: a lazy registry from provider kind to the module that implements it.

Nothing here imports a provider module, httpx or any other heavy library; ``create_provider``
imports exactly the module its kind needs, at the moment it is needed.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from openheim.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from openheim.providers.base import ModelRequest, Provider, ProviderSettings, StreamItem

Factory = Callable[["ProviderSettings", "httpx.AsyncClient | None"], "Provider"]

_MODULES: dict[str, str] = {
    "anthropic": "openheim.providers.anthropic",
    "openai": "openheim.providers.openai_chat",
    "openai_compatible": "openheim.providers.openai_chat",
    "gemini": "openheim.providers.gemini",
    "llama_cpp": "openheim.providers.llama_cpp",
    "llama_server": "openheim.providers.llama_server",
    "claude_cli": "openheim.providers.cli_agent",
    "codex_cli": "openheim.providers.cli_agent",
    "opencode_cli": "openheim.providers.cli_agent",
}
_FACTORIES: dict[str, Factory] = {}


def register(kind: str, factory: Factory) -> None:
    """Add (or replace) a provider kind, e.g. from a plugin or a test."""
    _FACTORIES[kind] = factory


_HTTP_KINDS = frozenset({"anthropic", "openai", "openai_compatible", "gemini"})


def takes_shared_client(kind: str) -> bool:
    """Whether a provider of ``kind`` is one of openheim's HTTP adapters, which use the client
    they are given and never close it, so sessions may lend them a shared one (a kind a
    plugin registered gets None, as docs/custom-provider.md says)."""
    factory = _FACTORIES.get(kind)
    module = _MODULES.get(kind)
    if kind not in _HTTP_KINDS or module is None:
        return False
    return factory is None or getattr(factory, "__module__", None) == module


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
    return _closable(factory(settings, http_client), settings.kind)


def _closable(provider: Provider, kind: str) -> Provider:
    """``provider``, or, for one written before ``aclose`` joined the protocol, the same
    provider with an ``aclose`` that releases nothing (deprecated: a later release refuses it)."""
    if callable(getattr(provider, "aclose", None)):
        return provider
    warnings.warn(
        f"the provider of kind {kind!r} has no aclose(); add `async def aclose(self) -> None` "
        "to it (release its clients, processes or files there, or do nothing)",
        DeprecationWarning,
        stacklevel=3,
    )
    return _WithoutClose(provider)


class _WithoutClose:
    """A provider without ``aclose`` given one that does nothing."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        return self.inner.stream(request)

    async def aclose(self) -> None:
        """Nothing to release."""
