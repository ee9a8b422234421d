"""The provider registry: ``aclose`` is part of the protocol; a factory whose provider lacks it
is adapted once, at the registry, with a deprecation warning."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openheim.messages import Message
from openheim.providers import create_provider, register
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderSettings,
    StreamItem,
    complete,
)
from openheim.testing import ScriptedProvider


class Unclosable:
    """A provider written before ``aclose`` joined the protocol."""

    name = "old"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield ModelResponse(Message.assistant("still works"), "end_turn")


def settings(kind: str) -> ProviderSettings:
    return ProviderSettings(name=kind, kind=kind, api_base="", model="m")


async def test_a_provider_with_aclose_is_returned_as_is() -> None:
    made = ScriptedProvider(["hi"])
    register("registry-closable", lambda s, c: made)
    assert create_provider(settings("registry-closable")) is made


async def test_a_provider_without_aclose_is_adapted_with_a_deprecation_warning() -> None:
    register("registry-unclosable", lambda s, c: Unclosable())  # type: ignore[arg-type,return-value]
    with pytest.warns(DeprecationWarning, match=r"'registry-unclosable' has no aclose\(\)"):
        provider = create_provider(settings("registry-unclosable"))
    assert isinstance(provider, Provider) and provider.name == "old"
    request = ModelRequest("m", (Message.user("hi"),))
    assert (await complete(provider, request)).message.text == "still works"
    await provider.aclose()  # releases nothing, and does not fail
