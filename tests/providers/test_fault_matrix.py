"""Every fault against every native adapter, through the shared retry wrapper, over loopback.

Retried faults must cost exactly one extra request and honour ``Retry-After`` (asserted on the
delay the wrapper schedules, through an injected clock); the others must be raised at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    StreamCut,
)
from openheim.events import RetryNotice
from openheim.messages import Message
from openheim.providers import create_provider
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.testing import FakeLLMServer, FakeReply

KINDS = ["openai", "anthropic", "gemini"]
REQUEST = ModelRequest("test-model", (Message.user("hi"),))


class Clock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def base_for(kind: str, server: FakeLLMServer) -> str:
    if kind == "gemini":
        return server.base_url.removesuffix("/v1") + "/v1beta"
    return server.base_url


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def call(kind: str, server: FakeLLMServer, clock: Clock) -> list[StreamItem]:
    settings = ProviderSettings(
        "fake", kind, base_for(kind, server), "test-model", api_key="k" * 12, timeout_secs=10
    )
    inner = create_provider(settings)
    provider = RetryingProvider(inner, RetryPolicy(max_retries=2), sleep=clock.sleep)
    try:
        return [item async for item in provider.stream(REQUEST)]
    finally:
        await provider.aclose()


RETRIED: list[tuple[str, dict[str, Any]]] = [
    ("429", {"status": 429}),
    ("500", {"status": 500}),
    ("502", {"status": 502}),
    ("503", {"status": 503}),
    ("504", {"status": 504}),
    ("529", {"status": 529}),
    ("cut", {"text": "partial", "cut_stream_after": 0}),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("name", "fault"), RETRIED, ids=[r[0] for r in RETRIED])
async def test_retried_faults(
    kind: str, name: str, fault: dict[str, Any], server: FakeLLMServer
) -> None:
    server.add(FakeReply(**fault), FakeReply(text="recovered"))
    clock = Clock()
    items = await call(kind, server, clock)
    assert len(server.requests) == 2
    assert [type(i) for i in items if isinstance(i, RetryNotice)] == [RetryNotice]
    last = items[-1]
    assert isinstance(last, ModelResponse) and last.message.text == "recovered"
    assert len(clock.sleeps) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_retry_after_is_honoured(kind: str, server: FakeLLMServer) -> None:
    server.add(FakeReply(status=429, retry_after=7), FakeReply(text="ok"))
    clock = Clock()
    await call(kind, server, clock)
    assert clock.sleeps == [7.0]


@pytest.mark.parametrize("kind", KINDS)
async def test_gives_up_after_max_retries(kind: str, server: FakeLLMServer) -> None:
    server.add(*[FakeReply(status=503) for _ in range(3)])
    clock = Clock()
    with pytest.raises(ProviderHTTPError):
        await call(kind, server, clock)
    assert len(server.requests) == 3 and len(clock.sleeps) == 2


NOT_RETRIED: list[tuple[str, dict[str, Any], type[ProviderError]]] = [
    ("400", {"status": 400, "error_body": "bad request"}, ProviderHTTPError),
    ("401", {"status": 401, "error_body": "invalid key"}, ProviderHTTPError),
    ("403", {"status": 403, "error_body": "forbidden"}, ProviderHTTPError),
    ("404", {"status": 404, "error_body": "no such model"}, ProviderHTTPError),
    ("overflow", {"status": 400, "error_body": "prompt is too long"}, ContextOverflow),
    ("not-json", {"raw_events": ["this is not json"]}, ProviderProtocolError),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("name", "fault", "error"), NOT_RETRIED, ids=[r[0] for r in NOT_RETRIED])
async def test_permanent_faults_are_reported_at_once(
    kind: str, name: str, fault: dict[str, Any], error: type[ProviderError], server: FakeLLMServer
) -> None:
    server.add(FakeReply(**fault))
    clock = Clock()
    with pytest.raises(error) as caught:
        await call(kind, server, clock)
    assert not isinstance(caught.value, StreamCut)
    assert len(server.requests) == 1 and clock.sleeps == []
    assert "k" * 12 not in str(caught.value)
