"""The retry wrapper: what is retried, when, how long it waits, and what it announces."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openheim.errors import (
    ContextOverflow,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderUnavailable,
    StreamCut,
)
from openheim.events import RetryNotice, TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.testing import Reply, ScriptedProvider

REQUEST = ModelRequest("m", (Message.user("hi"),))


class Clock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def wrap(provider: ScriptedProvider, clock: Clock, **policy: float) -> RetryingProvider:
    chosen = RetryPolicy(**policy)  # type: ignore[arg-type]
    return RetryingProvider(provider, chosen, sleep=clock.sleep, jitter=lambda: 0.5)


async def drain(provider: RetryingProvider) -> list[StreamItem]:
    return [item async for item in provider.stream(REQUEST)]


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
async def test_retryable_statuses_are_retried(status: int) -> None:
    clock = Clock()
    inner = ScriptedProvider([ProviderHTTPError("busy", status=status), "ok"])
    items = await drain(wrap(inner, clock))
    notices = [i for i in items if isinstance(i, RetryNotice)]
    assert [(n.attempt, n.max_retries) for n in notices] == [(1, 3)]
    assert isinstance(items[-1], ModelResponse) and items[-1].message.text == "ok"
    assert len(inner.requests) == 2


@pytest.mark.parametrize(
    "error",
    [
        ProviderUnavailable("connection refused"),
        StreamCut("stream ended early"),
    ],
)
async def test_connection_errors_and_cut_streams_are_retried(error: Exception) -> None:
    clock = Clock()
    inner = ScriptedProvider([error, "ok"])
    items = await drain(wrap(inner, clock))
    assert isinstance(items[-1], ModelResponse)


@pytest.mark.parametrize(
    "error",
    [
        ProviderHTTPError("bad request", status=400),
        ProviderHTTPError("bad key", status=401),
        ProviderHTTPError("forbidden", status=403),
        ProviderHTTPError("no such model", status=404),
        ContextOverflow("prompt too long", status=400),
        ProviderProtocolError("not JSON"),
    ],
)
async def test_permanent_errors_are_not_retried(error: Exception) -> None:
    clock = Clock()
    inner = ScriptedProvider([error])
    with pytest.raises(type(error)):
        await drain(wrap(inner, clock))
    assert clock.sleeps == [] and len(inner.requests) == 1


async def test_backoff_grows_with_jitter_and_gives_up() -> None:
    clock = Clock()
    errors = [ProviderHTTPError("busy", status=503) for _ in range(4)]
    inner = ScriptedProvider(errors)
    with pytest.raises(ProviderHTTPError):
        await drain(wrap(inner, clock, base_delay=1.0))
    assert clock.sleeps == [0.75, 1.5, 3.0]  # half the ceiling plus half of it times 0.5
    assert len(inner.requests) == 4


async def test_retry_after_wins_and_is_capped() -> None:
    clock = Clock()
    inner = ScriptedProvider(
        [
            ProviderHTTPError("slow down", status=429, retry_after=7),
            ProviderHTTPError("slow down", status=429, retry_after=3600),
            "ok",
        ]
    )
    await drain(wrap(inner, clock, max_retry_after=60))
    assert clock.sleeps == [7, 60]


async def test_no_retry_after_the_first_forwarded_chunk() -> None:
    async def breaks_midway(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("half an ans")
        raise StreamCut("stream ended early")

    clock = Clock()
    inner = ScriptedProvider([breaks_midway, Reply("never used")])
    with pytest.raises(StreamCut):
        await drain(wrap(inner, clock))
    assert clock.sleeps == [] and inner.remaining == 1
