"""ScriptedProvider: plays its script back, records requests, fails loudly when misused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openheim.errors import ScriptError
from openheim.events import TextDelta, ThinkingDelta
from openheim.messages import Message, TextBlock, ThinkingBlock
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem, complete
from openheim.testing import Reply, ScriptedProvider, tool_call


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest("m", (Message.user(text),))


async def drain(provider: ScriptedProvider, req: ModelRequest) -> list[StreamItem]:
    return [item async for item in provider.stream(req)]


async def test_text_step_streams_and_completes() -> None:
    provider = ScriptedProvider(["hello"])
    items = await drain(provider, request())
    assert items[0] == TextDelta("hello")
    last = items[-1]
    assert isinstance(last, ModelResponse) and last.message.text == "hello"
    assert last.finish == "end_turn"


async def test_reply_with_chunks_thinking_and_tool_calls() -> None:
    call = tool_call("read_file", {"path": "a"})
    provider = ScriptedProvider(
        [Reply(chunks=["a", "b"], thinking="hmm", signature="sig", tool_calls=[call])]
    )
    items = await drain(provider, request())
    assert items[:3] == [ThinkingDelta("hmm"), TextDelta("a"), TextDelta("b")]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.finish == "tool_use"
    assert response.message.content == (ThinkingBlock("hmm", "sig"), TextBlock("ab"), call)


async def test_callable_steps_react_to_the_request() -> None:
    async def stream_back(req: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("raw")
        yield ModelResponse(Message.assistant("raw"), "end_turn")

    provider = ScriptedProvider([lambda req: f"you said {req.messages[-1].text}", stream_back])
    first = await complete(provider, request("ping"))
    second = await complete(provider, request())
    assert first.message.text == "you said ping"
    assert second.message.text == "raw"
    assert [r.messages[-1].text for r in provider.requests] == ["ping", "hi"]


async def test_async_callable_step() -> None:
    async def later(req: ModelRequest) -> Reply:
        return Reply("async")

    provider = ScriptedProvider([later])
    assert (await complete(provider, request())).message.text == "async"


async def test_exception_step_raises() -> None:
    provider = ScriptedProvider([ValueError("boom")])
    with pytest.raises(ValueError, match="boom"):
        await complete(provider, request())


async def test_extra_call_fails() -> None:
    provider = ScriptedProvider(["one"])
    await complete(provider, request())
    with pytest.raises(ScriptError, match="unexpected model call #2"):
        await complete(provider, request("again"))


def test_leftover_steps_fail() -> None:
    provider = ScriptedProvider(["unused"])
    with pytest.raises(ScriptError, match="never used"):
        provider.assert_done()
    with pytest.raises(ScriptError), ScriptedProvider(["unused"]):
        pass


async def test_bad_step_type_is_reported() -> None:
    provider = ScriptedProvider([lambda req: 42])
    with pytest.raises(ScriptError, match="must give"):
        await complete(provider, request())
