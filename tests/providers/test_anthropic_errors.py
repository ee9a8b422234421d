"""Anthropic adapter, failures: HTTP errors, error events, broken streams, unreachable servers."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderUnavailable,
    StreamCut,
)
from openheim.events import RetryNotice, TextDelta
from openheim.providers.anthropic import create
from openheim.providers.base import ModelResponse, ProviderSettings
from openheim.providers.retry import RetryingProvider
from openheim.testing.fake_replies import FakeReply
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY, drain, drain_whole_body, request
from tests.providers.test_anthropic_support import MakeAnthropic, anthropic_factory

OVERLOADED = {"type": "overloaded_error", "message": "Overloaded"}


@pytest.fixture
async def anthropic(server: FakeLLMServer) -> AsyncIterator[MakeAnthropic]:
    async with anthropic_factory(server) as make:
        yield make


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that is bound but not listening, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def assert_key_hidden(error: ProviderError) -> None:
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    assert all(API_KEY not in str(arg) for arg in error.args)
    assert API_KEY not in (error.hint or "")


async def collect(stream: AsyncIterator[object], into: list[object]) -> None:
    async for item in stream:
        into.append(item)


async def test_401_names_the_key_source_without_the_key(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(status=401, error_body=f"invalid x-api-key {API_KEY}"))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(anthropic(), request())
    error = caught.value
    assert error.status == 401 and not error.retryable
    assert "invalid x-api-key" in error.message
    assert "ANTHROPIC_API_KEY" in (error.hint or "")
    assert_key_hidden(error)


async def test_401_without_a_key_says_none_is_set(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(status=401, error_body="x-api-key header is required"))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(anthropic(api_key=None), request())
    assert "has no API key" in (caught.value.hint or "")
    assert "[providers.claude]" in (caught.value.hint or "")


async def test_429_with_retry_after(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    server.add(FakeReply(status=429, retry_after=7, error_body="Number of requests exceeded"))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(anthropic(), request())
    error = caught.value
    assert (error.status, error.retry_after, error.retryable) == (429, 7.0, True)
    assert "Number of requests exceeded" in error.message


async def test_529_overloaded_is_retryable(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    server.add(FakeReply(status=529))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(anthropic(), request())
    assert caught.value.status == 529 and caught.value.retryable
    assert "fake server error (HTTP 529)" in caught.value.message


async def test_prompt_too_long_is_context_overflow(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        },
    }
    server.add(FakeReply(status=400, error_body=body))
    with pytest.raises(ContextOverflow) as caught:
        await drain(anthropic(), request())
    assert caught.value.status == 400 and not caught.value.retryable
    assert "208310 tokens" in caught.value.message


async def test_other_400s_are_plain_http_errors(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(status=400, error_body="max_tokens: Field required"))
    with pytest.raises(ProviderError) as caught:
        await drain(anthropic(), request())
    assert type(caught.value) is ProviderHTTPError
    assert "max_tokens: Field required" in caught.value.message


async def test_overloaded_error_event_mid_stream_is_retryable(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(chunks=["Hel"], error_event=OVERLOADED))
    items: list[object] = []
    with pytest.raises(ProviderHTTPError, match="overloaded_error: Overloaded") as caught:
        await collect(anthropic().stream(request()), items)
    assert items == [TextDelta("Hel")]
    assert caught.value.status == 529 and caught.value.retryable


async def test_unknown_error_event_is_not_retried(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    event = {"type": "mystery_error", "message": f"key {API_KEY} broke it"}
    server.add(FakeReply(error_event=event))
    with pytest.raises(ProviderError, match="mystery_error") as caught:
        await drain(anthropic(), request())
    assert type(caught.value) is ProviderError and not caught.value.retryable
    assert_key_hidden(caught.value)


async def test_prompt_too_long_error_event_is_context_overflow(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    event = {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}
    server.add(FakeReply(error_event=event))
    with pytest.raises(ContextOverflow):
        await drain(anthropic(), request())


async def test_retry_wrapper_recovers_from_an_overloaded_event(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(error_event=OVERLOADED), "recovered")
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    provider = RetryingProvider(anthropic(), sleep=sleep, jitter=lambda: 0.0)
    items = [item async for item in provider.stream(request())]
    assert isinstance(items[0], RetryNotice) and "Overloaded" in items[0].error
    assert isinstance(items[-1], ModelResponse) and items[-1].message.text == "recovered"
    assert slept == [0.5]


async def test_stream_cut_before_message_stop(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    # message_start, ping, text start, two deltas: then the connection drops
    server.add(FakeReply(chunks=["a", "b", "c"], cut_stream_after=5))
    items: list[object] = []
    with pytest.raises(StreamCut, match="stream ended early") as caught:
        await collect(anthropic().stream(request()), items)
    assert items == [TextDelta("a"), TextDelta("b")]
    assert caught.value.retryable


async def test_clean_end_without_message_stop_is_a_cut(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}
    server.add(FakeReply(raw_events=[{"type": "message_start", "message": {}}, delta]))
    with pytest.raises(StreamCut, match="before message_stop"):
        await drain(anthropic(), request())


async def test_non_json_data_is_a_protocol_error(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(raw_events=[{"type": "ping"}, "this is not json"]))
    with pytest.raises(ProviderProtocolError, match="not JSON: 'this is not json'") as caught:
        await drain(anthropic(), request())
    assert not caught.value.retryable


async def test_event_that_is_not_an_object_is_a_protocol_error(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(raw_events=["[1, 2, 3]"]))
    with pytest.raises(ProviderProtocolError, match="expected a JSON object"):
        await drain(anthropic(), request())


async def test_connection_refused_is_unavailable(
    anthropic: MakeAnthropic, refused_port: int
) -> None:
    base = f"http://127.0.0.1:{refused_port}/v1"
    with pytest.raises(ProviderUnavailable) as caught:
        await drain(anthropic(api_base=base), request())
    assert f"{base}/messages" in caught.value.message
    assert caught.value.retryable
    assert_key_hidden(caught.value)


async def test_stalled_stream_hits_the_idle_timeout(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(chunks=["partial ", "answer"], hang_at=4))
    items: list[object] = []
    with pytest.raises(ProviderUnavailable, match="while streaming"):
        await collect(anthropic(timeout_secs=0.3).stream(request()), items)
    assert items == [TextDelta("partial ")]


async def test_body_that_is_neither_stream_nor_json() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, text="<html>login</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = ProviderSettings("proxy", "anthropic", "https://example.invalid/v1", "m")
        provider = create(settings, client)
        with pytest.raises(ProviderProtocolError, match="text/html"):
            await drain(provider, request())
        await provider.aclose()
        assert not client.is_closed  # an injected client belongs to the caller


async def test_owned_client_is_closed_by_aclose(anthropic: MakeAnthropic) -> None:
    provider = anthropic()
    await provider.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await drain(provider, request())


@pytest.mark.parametrize("content", [5, True, 1.5])
async def test_a_whole_answer_whose_content_is_not_a_list_has_no_blocks(content: object) -> None:
    body = {"type": "message", "content": content, "stop_reason": "end_turn"}
    deltas, response = await drain_whole_body(create, "anthropic", body)
    assert (deltas, response.message.content, response.raw_finish) == ([], (), "end_turn")
