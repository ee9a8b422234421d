"""Gemini adapter, failures: HTTP errors, unreachable servers, broken streams; the key never
shows."""

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
from openheim.events import TextDelta
from openheim.providers.base import ProviderSettings
from openheim.providers.gemini import create
from openheim.testing.fake_replies import FakeReply
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY, drain, request
from tests.providers.test_gemini_support import MakeGemini, gemini_factory


@pytest.fixture
async def gemini(server: FakeLLMServer) -> AsyncIterator[MakeGemini]:
    async with gemini_factory(server) as make:
        yield make


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that is bound but not listening, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def assert_key_hidden(error: BaseException) -> None:
    assert API_KEY not in str(error)
    assert API_KEY not in repr(error)
    assert all(API_KEY not in str(arg) for arg in error.args)
    if isinstance(error, ProviderError):
        assert API_KEY not in (error.hint or "")


async def failure(server: FakeLLMServer, gemini: MakeGemini, reply: FakeReply) -> ProviderError:
    """The error one call raises when the server answers ``reply``."""
    server.add(reply)
    with pytest.raises(ProviderError) as caught:
        await drain(gemini(), request())
    assert_key_hidden(caught.value)
    return caught.value


async def test_401_names_the_key_source_without_the_key(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    error = await failure(
        server, gemini, FakeReply(status=401, error_body=f"Request had invalid key {API_KEY}")
    )
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 401 and not error.retryable
    assert "Request had invalid key [redacted]" in error.message
    assert "GEMINI_API_KEY" in (error.hint or "")
    assert "[providers.gem]" in (error.hint or "")


async def test_invalid_key_400_gets_the_key_hint(server: FakeLLMServer, gemini: MakeGemini) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"reason": "API_KEY_INVALID", "domain": "googleapis.com"}],
        }
    }
    error = await failure(server, gemini, FakeReply(status=400, error_body=body))
    assert isinstance(error, ProviderHTTPError) and error.status == 400
    assert "API key not valid" in error.message
    assert "GEMINI_API_KEY" in (error.hint or "")


async def test_403_gets_the_key_hint(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(server, gemini, FakeReply(status=403))
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 403 and "fake server error (HTTP 403)" in error.message
    assert "GEMINI_API_KEY" in (error.hint or "")


async def test_429_with_retry_after_header(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(
        server, gemini, FakeReply(status=429, retry_after=7, error_body="Quota exceeded")
    )
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.retry_after, error.retryable) == (429, 7.0, True)
    assert "Quota exceeded" in error.message
    assert "rate limited" in (error.hint or "")


async def test_429_retry_delay_from_the_body(server: FakeLLMServer, gemini: MakeGemini) -> None:
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
            ],
        }
    }
    error = await failure(server, gemini, FakeReply(status=429, error_body=body))
    assert isinstance(error, ProviderHTTPError)
    assert (error.retry_after, error.retryable) == (37.0, True)


async def test_503_is_retryable(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(
        server, gemini, FakeReply(status=503, error_body="The model is overloaded.")
    )
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 503 and error.retryable and error.retry_after is None
    assert "The model is overloaded." in error.message
    assert "server failed" in (error.hint or "")


async def test_404_points_at_api_base_and_model(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(server, gemini, FakeReply(status=404, error_body="models/x not found"))
    assert "/v1beta" in (error.hint or "") and "test-model" in (error.hint or "")


async def test_context_overflow(server: FakeLLMServer, gemini: MakeGemini) -> None:
    message = (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    )
    error = await failure(server, gemini, FakeReply(status=400, error_body=message))
    assert isinstance(error, ContextOverflow)
    assert error.status == 400 and not error.retryable
    assert "context window" in (error.hint or "")


async def test_other_400s_are_plain_http_errors(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(
        server, gemini, FakeReply(status=400, error_body="Invalid value at 'generation_config'")
    )
    assert type(error) is ProviderHTTPError
    assert "generation_config" in error.message


async def test_error_in_the_stream(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add(
        FakeReply(
            chunks=["Hello"],
            error_event={"code": 500, "message": f"internal for {API_KEY}", "status": "INTERNAL"},
        )
    )
    items: list[object] = []
    with pytest.raises(ProviderError, match="mid-stream: internal for") as caught:
        async for item in gemini().stream(request()):
            items.append(item)
    assert items == [TextDelta("Hello")]
    assert "(INTERNAL)" in caught.value.message
    assert not isinstance(caught.value, ProviderHTTPError | ProviderUnavailable)
    assert_key_hidden(caught.value)


async def test_connection_cut_mid_stream(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add(FakeReply(chunks=["a", "b", "c"], cut_stream_after=2))
    items: list[object] = []
    with pytest.raises(StreamCut, match="stream ended early") as caught:
        async for item in gemini().stream(request()):
            items.append(item)
    assert items == [TextDelta("a"), TextDelta("b")]
    assert caught.value.retryable


async def test_clean_end_without_finish_reason_is_a_cut(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    frame = {"candidates": [{"content": {"role": "model", "parts": [{"text": "a"}]}}]}
    error = await failure(server, gemini, FakeReply(raw_events=[frame]))
    assert isinstance(error, StreamCut) and error.retryable
    assert "before a finish reason" in error.message


async def test_non_json_data_is_a_protocol_error(server: FakeLLMServer, gemini: MakeGemini) -> None:
    error = await failure(server, gemini, FakeReply(raw_events=["<html>oops</html>"]))
    assert type(error) is ProviderProtocolError
    assert "not JSON: '<html>oops</html>'" in error.message


async def test_json_that_is_not_an_object_is_a_protocol_error(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    error = await failure(server, gemini, FakeReply(raw_events=["[1, 2]"]))
    assert type(error) is ProviderProtocolError
    assert "expected a JSON object" in error.message


async def test_connection_refused_is_unavailable(gemini: MakeGemini, refused_port: int) -> None:
    base = f"http://127.0.0.1:{refused_port}/v1beta"
    with pytest.raises(ProviderUnavailable) as caught:
        await drain(gemini(api_base=base), request())
    assert f"{base}/models/test-model:streamGenerateContent?alt=sse" in caught.value.message
    assert "cannot connect" in caught.value.message
    assert_key_hidden(caught.value)


async def test_body_that_is_neither_stream_nor_json() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, text="<html>login</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = ProviderSettings("g", "gemini", "https://example.invalid/v1beta", "m")
        provider = create(settings, client)
        with pytest.raises(ProviderProtocolError, match="text/html"):
            await drain(provider, request())
        await provider.aclose()
        assert not client.is_closed  # an injected client belongs to the caller


async def test_owned_client_is_closed_by_aclose(gemini: MakeGemini) -> None:
    provider = gemini()
    await provider.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await drain(provider, request())


async def test_repr_and_url_hide_the_key() -> None:
    settings = ProviderSettings("g", "gemini", "https://example.invalid/v1beta", "m", API_KEY)
    async with create(settings) as provider:
        assert API_KEY not in repr(provider)
        assert API_KEY not in repr(settings)
        assert API_KEY not in provider.url("m")


async def test_provider_recovers_after_a_failure(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add(FakeReply(status=500), "recovered")
    provider = gemini()
    with pytest.raises(ProviderHTTPError):
        await drain(provider, request())
    _, response = await drain(provider, request())
    assert response.message.text == "recovered"
