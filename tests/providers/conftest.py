from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from openheim.providers import create_provider
from openheim.providers.base import ProviderSettings
from openheim.providers.http_client import TRANSPORT_ENV
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY

MakeProvider = Callable[..., OpenAIChatProvider]


@pytest.fixture(params=["openheim", "httpx"])
def each_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs once on openheim's own HTTP transport and once on httpx's
    (``OPENHEIM_HTTP_TRANSPORT``): a provider's stream must read the same through both."""
    transport: str = request.param
    monkeypatch.setenv(TRANSPORT_ENV, transport)
    return transport


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A started fake server with an empty script; tests queue replies with ``server.add``."""
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
async def make_provider(server: FakeLLMServer) -> AsyncIterator[MakeProvider]:
    """Builds providers through the registry, pointed at ``server``; closes them afterwards."""
    made: list[OpenAIChatProvider] = []

    def make(kind: str = "openai_compatible", **fields: Any) -> OpenAIChatProvider:
        fields.setdefault("api_base", server.base_url)
        fields.setdefault("api_key", API_KEY)
        fields.setdefault("timeout_secs", 10.0)
        settings = ProviderSettings(name="fake", kind=kind, model="test-model", **fields)
        provider = create_provider(settings)
        assert isinstance(provider, OpenAIChatProvider)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()
