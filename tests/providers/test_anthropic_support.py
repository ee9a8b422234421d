"""Shared helpers for the Anthropic wire tests (no tests of its own).

The shared ``make_provider`` fixture builds OpenAI providers only, so the Anthropic test modules
build theirs with ``anthropic_factory``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from openheim.providers import create_provider
from openheim.providers.anthropic import AnthropicProvider
from openheim.providers.base import ProviderSettings
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY, drain, request

MakeAnthropic = Callable[..., AnthropicProvider]


@asynccontextmanager
async def anthropic_factory(server: FakeLLMServer) -> AsyncIterator[MakeAnthropic]:
    """Builds ``anthropic`` providers through the registry, pointed at ``server``; closes them
    all on exit."""
    made: list[AnthropicProvider] = []

    def make(**fields: Any) -> AnthropicProvider:
        fields.setdefault("api_base", server.base_url)
        fields.setdefault("api_key", API_KEY)
        fields.setdefault("timeout_secs", 10.0)
        settings = ProviderSettings(name="claude", kind="anthropic", model="test-model", **fields)
        provider = create_provider(settings)
        assert isinstance(provider, AnthropicProvider)
        made.append(provider)
        return provider

    try:
        yield make
    finally:
        for provider in made:
            await provider.aclose()


async def sent_body(
    server: FakeLLMServer, provider: AnthropicProvider, *messages: Any, **fields: Any
) -> Any:
    """Make one call answered "ok" and return the JSON body the server received."""
    server.add("ok")
    await drain(provider, request(*messages, **fields))
    return server.requests[-1].body
