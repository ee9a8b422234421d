"""Shared helpers for the Gemini wire tests (no tests of its own).

The shared ``make_provider`` fixture builds OpenAI providers only, so the Gemini test modules
build theirs with ``gemini_factory``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from openheim.providers import create_provider
from openheim.providers.base import ProviderSettings
from openheim.providers.gemini import GeminiProvider
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY

MakeGemini = Callable[..., GeminiProvider]


def gemini_base(server: FakeLLMServer) -> str:
    """The fake server's ``api_base`` in Gemini's shape: ``http://127.0.0.1:PORT/v1beta``."""
    return server.base_url.removesuffix("/v1") + "/v1beta"


@asynccontextmanager
async def gemini_factory(
    server: FakeLLMServer, client: httpx.AsyncClient | None = None
) -> AsyncIterator[MakeGemini]:
    """Builds ``gemini`` providers through the registry, pointed at ``server`` (on ``client``
    if given, else each on its own); closes them all on exit."""
    made: list[GeminiProvider] = []

    def make(**fields: Any) -> GeminiProvider:
        fields.setdefault("api_base", gemini_base(server))
        fields.setdefault("api_key", API_KEY)
        fields.setdefault("model", "test-model")
        fields.setdefault("timeout_secs", 10.0)
        provider = create_provider(ProviderSettings(name="gem", kind="gemini", **fields), client)
        assert isinstance(provider, GeminiProvider)
        made.append(provider)
        return provider

    try:
        yield make
    finally:
        for provider in made:
            await provider.aclose()
