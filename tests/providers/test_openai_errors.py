"""OpenAI chat adapter, failures: HTTP errors, unreachable and stalled servers, broken streams."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from email.utils import formatdate

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
from openheim.events import TextDelta
from openheim.messages import TextBlock
from openheim.providers.base import ModelResponse, ProviderSettings
from openheim.providers.openai_chat import OpenAIChatProvider, create
from openheim.testing.fake_replies import FakeReply
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.conftest import MakeProvider
from tests.providers.support import API_KEY, drain, drain_whole_body, request


def assert_key_hidden(error: BaseException) -> None:
    assert API_KEY not in str(error)
    assert API_KEY not in repr(error)
    assert all(API_KEY not in str(arg) for arg in error.args)
    if isinstance(error, ProviderError):
        assert API_KEY not in (error.hint or "")


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that is bound but not listening, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_401_names_the_key_problem_without_the_key(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(status=401, error_body=f"Incorrect API key provided: {API_KEY}"))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(make_provider(kind="openai"), request())
    error = caught.value
    assert error.status == 401 and not error.retryable
    assert "Incorrect API key provided" in error.message
    assert "OPENAI_API_KEY" in (error.hint or "")
    assert_key_hidden(error)


async def test_429_with_retry_after_seconds(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(status=429, retry_after=7, error_body="Rate limit reached"))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(make_provider(), request())
    error = caught.value
    assert (error.status, error.retry_after, error.retryable) == (429, 7.0, True)
    assert "Rate limit reached" in error.message
    assert "rate limited" in (error.hint or "")


async def test_503_with_retry_after_date(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    import time

    server.add(FakeReply(status=503, retry_after=formatdate(time.time() + 120, usegmt=True)))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(make_provider(), request())
    assert caught.value.retry_after is not None
    assert 100 < caught.value.retry_after <= 121


async def test_500_is_a_retryable_server_error(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(status=500))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(make_provider(), request())
    error = caught.value
    assert error.status == 500 and error.retryable and error.retry_after is None
    assert "fake server error (HTTP 500)" in error.message
    assert "server failed" in (error.hint or "")


async def test_404_points_at_api_base_and_model(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(status=404, error_body={"detail": "Not Found"}))
    with pytest.raises(ProviderHTTPError) as caught:
        await drain(make_provider(), request())
    assert "Not Found" in caught.value.message
    assert server.base_url in (caught.value.hint or "")
    assert "test-model" in (caught.value.hint or "")


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ],
)
async def test_context_overflow_is_recognised(
    server: FakeLLMServer, make_provider: MakeProvider, body: dict[str, object]
) -> None:
    server.add(FakeReply(status=400, error_body=body))
    with pytest.raises(ContextOverflow) as caught:
        await drain(make_provider(), request())
    assert caught.value.status == 400 and not caught.value.retryable
    assert "context window" in (caught.value.hint or "")


async def test_other_400s_are_plain_http_errors(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(status=400, error_body="temperature must be between 0 and 2"))
    with pytest.raises(ProviderError) as caught:
        await drain(make_provider(), request())
    assert type(caught.value) is ProviderHTTPError
    assert "temperature must be" in caught.value.message


async def test_connection_refused_is_unavailable(
    make_provider: MakeProvider, refused_port: int
) -> None:
    base = f"http://127.0.0.1:{refused_port}/v1"
    with pytest.raises(ProviderUnavailable) as caught:
        await drain(make_provider(api_base=base), request())
    assert f"{base}/chat/completions" in caught.value.message
    assert "cannot connect" in caught.value.message
    assert "server is running" in (caught.value.hint or "")
    assert_key_hidden(caught.value)


async def test_stalled_stream_hits_the_idle_timeout(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(chunks=["partial ", "answer"], hang_at=2))
    deltas: list[object] = []
    with pytest.raises(ProviderUnavailable, match=r"no data .* for 0\.3 seconds while streaming"):
        async for item in make_provider(timeout_secs=0.3).stream(request()):
            deltas.append(item)
    assert deltas == [TextDelta("partial ")]


async def test_silent_server_hits_the_timeout_before_headers(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(text="never", stream=False, hang_at=0))
    with pytest.raises(ProviderUnavailable, match="waiting for a response"):
        await drain(make_provider(timeout_secs=0.3), request())


async def test_non_json_event_is_a_protocol_error(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(raw_events=["this is not json", "[DONE]"]))
    with pytest.raises(ProviderProtocolError, match="not JSON: 'this is not json'"):
        await drain(make_provider(), request())


async def test_error_event_mid_stream(server: FakeLLMServer, make_provider: MakeProvider) -> None:
    server.add(
        FakeReply(
            chunks=["Hello"],
            error_event={"message": f"upstream overloaded for key {API_KEY}", "code": 502},
        )
    )
    items: list[object] = []
    with pytest.raises(ProviderError, match="upstream overloaded") as caught:
        async for item in make_provider().stream(request()):
            items.append(item)
    assert items == [TextDelta("Hello")]
    assert not isinstance(caught.value, ProviderHTTPError | ProviderUnavailable)
    assert_key_hidden(caught.value)


async def test_connection_cut_before_done(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(chunks=["a", "b", "c"], cut_stream_after=3))
    items: list[object] = []
    with pytest.raises(StreamCut, match="stream ended early") as caught:
        async for item in make_provider().stream(request()):
            items.append(item)
    assert items == [TextDelta("a"), TextDelta("b")]
    assert caught.value.retryable


async def test_clean_end_without_done_or_finish_is_early(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(raw_events=['{"choices": [{"index": 0, "delta": {"content": "a"}}]}']))
    with pytest.raises(StreamCut, match="without \\[DONE\\] or a finish reason"):
        await drain(make_provider(), request())


async def test_extra_request_gets_500_and_is_recorded(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add("only one")
    provider = make_provider()
    await drain(provider, request())
    with pytest.raises(ProviderHTTPError, match="script ran out") as caught:
        await drain(provider, request())
    assert caught.value.status == 500
    assert len(server.unexpected_requests) == 1
    assert server.unexpected_requests[0].messages == [{"role": "user", "content": "hi"}]
    with pytest.raises(AssertionError, match="1 unexpected request"):
        server.assert_done()


async def test_body_that_is_neither_stream_nor_json() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, text="<html>login</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = ProviderSettings("proxy", "openai", "https://example.invalid/v1", "m")
        provider = create(settings, client)
        with pytest.raises(ProviderProtocolError, match="text/html"):
            await drain(provider, request())
        await provider.aclose()
        assert not client.is_closed  # an injected client belongs to the caller


async def test_owned_client_is_closed_by_aclose(make_provider: MakeProvider) -> None:
    provider: OpenAIChatProvider = make_provider()
    await provider.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await drain(provider, request())


async def test_response_after_recovery(server: FakeLLMServer, make_provider: MakeProvider) -> None:
    """A failed call leaves the provider usable: the next call succeeds."""
    server.add(FakeReply(status=502), "recovered")
    provider = make_provider()
    with pytest.raises(ProviderHTTPError):
        await drain(provider, request())
    _, response = await drain(provider, request())
    assert isinstance(response, ModelResponse) and response.message.text == "recovered"


async def test_closing_the_stream_mid_answer_releases_it(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(chunks=["first ", "second"], hang_at=2), "next")
    provider = make_provider()
    stream = provider.stream(request())
    assert await anext(stream) == TextDelta("first ")
    await stream.aclose()  # what the loop does when the user cancels
    _, response = await drain(provider, request())
    assert response.message.text == "next"


async def test_cancelling_a_stalled_call_is_prompt(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(chunks=["first "], hang_at=1))
    provider = make_provider(timeout_secs=30)
    task = asyncio.create_task(drain(provider, request()))
    await asyncio.to_thread(server.wait_for_requests, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)


async def test_choices_or_tool_calls_that_are_not_lists_are_ignored(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    odd_choices = {"choices": 5}
    odd_calls = {"choices": [{"index": 0, "delta": {"tool_calls": True, "content": "hi"}}]}
    server.add(FakeReply(raw_events=[odd_choices, odd_calls, "[DONE]"]))
    deltas, response = await drain(make_provider(), request())
    assert deltas == [TextDelta("hi")]
    assert response.message.content[0] == TextBlock("hi")


@pytest.mark.parametrize("message", [5, "ab", [1], True])
async def test_a_whole_answer_whose_message_is_not_an_object_is_empty(message: object) -> None:
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    deltas, response = await drain_whole_body(create, "openai", body)
    assert (deltas, response.message.content, response.raw_finish) == ([], (), "stop")
