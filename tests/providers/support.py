"""Helpers for the provider wire tests: settings for a fake server, requests, draining streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from openheim.messages import Message
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderSettings,
    StreamItem,
)

API_KEY = "sk-test-0123456789abcdef"


def request(*messages: Message, **fields: Any) -> ModelRequest:
    """A request for model ``test-model``; one user message "hi" when none are given."""
    return ModelRequest("test-model", messages or (Message.user("hi"),), **fields)


async def drain(provider: Provider, req: ModelRequest) -> tuple[list[StreamItem], ModelResponse]:
    """All items of one stream, and its final response (which must be the last item)."""
    items = [item async for item in provider.stream(req)]
    last = items[-1]
    assert isinstance(last, ModelResponse), items
    assert not any(isinstance(item, ModelResponse) for item in items[:-1]), items
    return items[:-1], last


async def drain_whole_body(
    create: Callable[[ProviderSettings, httpx.AsyncClient], Provider],
    kind: str,
    body: dict[str, Any],
) -> tuple[list[StreamItem], ModelResponse]:
    """``drain`` a provider of ``kind`` whose server answers with ``body``, not streamed."""

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = ProviderSettings("odd", kind, "https://example.invalid/v1", "m")
        provider = create(settings, client)
        try:
            return await drain(provider, request())
        finally:
            await provider.aclose()
