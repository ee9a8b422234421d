"""Helpers for the provider wire tests: settings for a fake server, requests, draining streams."""

from __future__ import annotations

from typing import Any

from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, Provider, StreamItem

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
