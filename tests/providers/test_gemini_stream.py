"""Gemini adapter, response side: what we parse out of real streams on loopback, and one agent
run end to end on it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from openheim.events import Finished, TextDelta, ThinkingDelta
from openheim.loop import Agent
from openheim.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from openheim.providers.base import ProviderSettings
from openheim.providers.gemini import create
from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest
from openheim.testing.fake_server import FakeLLMServer
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.decorator import tool
from tests.providers.support import drain, request
from tests.providers.test_gemini_support import MakeGemini, gemini_factory

pytestmark = pytest.mark.usefixtures("each_transport")


@pytest.fixture
async def gemini(server: FakeLLMServer) -> AsyncIterator[MakeGemini]:
    async with gemini_factory(server) as make:
        yield make


def frame(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One ``GenerateContentResponse`` with the given parts."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


async def test_text_streams_as_several_deltas(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add(FakeReply(chunks=["Hel", "lo, ", "world", "!"]))
    deltas, response = await drain(gemini(), request())
    assert deltas == [TextDelta("Hel"), TextDelta("lo, "), TextDelta("world"), TextDelta("!")]
    assert response.message == Message("assistant", (TextBlock("Hello, world!"),))
    assert (response.finish, response.raw_finish) == ("end_turn", "STOP")
    assert response.model == "test-model"


async def test_two_function_calls_in_one_reply(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add(
        FakeReply(
            text="Reading both.",
            tool_calls=[
                FakeToolCall("read_file", {"path": "a.txt"}, id="fc_a"),
                FakeToolCall("grep", {"pattern": "TODO", "max": 3}, id="fc_b"),
            ],
        )
    )
    _, response = await drain(gemini(), request())
    assert response.message.content == (
        TextBlock("Reading both."),
        ToolUseBlock("fc_a", "read_file", {"path": "a.txt"}),
        ToolUseBlock("fc_b", "grep", {"pattern": "TODO", "max": 3}),
    )
    assert (response.finish, response.raw_finish) == ("tool_use", "STOP")


async def test_missing_ids_are_synthesised_and_unique(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    calls = [FakeToolCall("a", {}, id=""), FakeToolCall("b", {"x": 1}, id="")]
    server.add(FakeReply(tool_calls=calls), FakeReply(tool_calls=calls[:1]))
    provider = gemini()
    _, first = await drain(provider, request())
    _, second = await drain(provider, request())
    ids = [call.id for call in (*first.message.tool_uses, *second.message.tool_uses)]
    assert len(set(ids)) == 3 and all(i.startswith("call_") for i in ids)
    assert [call.arguments for call in first.message.tool_uses] == [{}, {"x": 1}]
    other = gemini()
    server.add(FakeReply(tool_calls=calls[:1]))
    _, third = await drain(other, request())
    assert third.message.tool_uses[0].id not in ids  # a fresh provider does not reuse them


async def test_arguments_that_are_not_an_object_are_kept_raw(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    server.add(FakeReply(tool_calls=[FakeToolCall("f", "[1, 2]", id="fc")]))
    _, response = await drain(gemini(), request())
    (call,) = response.message.tool_uses
    assert (call.arguments, call.raw_arguments) == ({}, "[1, 2]")


async def test_thought_parts_become_thinking_with_signature(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    server.add(FakeReply(text="42", reasoning="Six times seven.", thinking_signature="c2lnLTE="))
    deltas, response = await drain(gemini(), request())
    assert deltas == [
        ThinkingDelta("Six "),
        ThinkingDelta("times "),
        ThinkingDelta("seven."),
        TextDelta("42"),
    ]
    assert response.message.content == (
        ThinkingBlock("Six times seven.", "c2lnLTE="),
        TextBlock("42"),
    )


async def test_signature_on_a_function_call_is_kept(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    server.add(
        FakeReply(tool_calls=[FakeToolCall("ls", {}, id="fc_1")], thinking_signature="sig/fc+=")
    )
    _, response = await drain(gemini(), request())
    assert response.message.content == (ToolUseBlock("fc_1", "ls", {}, signature="sig/fc+="),)


async def test_a_signature_ends_its_block(server: FakeLLMServer, gemini: MakeGemini) -> None:
    """Streamed pieces join, but never across a signature: each goes back on its own part."""
    server.add(
        FakeReply(
            raw_events=[
                frame({"text": "plan ", "thought": True}),
                frame({"text": "it", "thought": True}),
                frame({"text": "", "thought": True, "thoughtSignature": "s1"}),
                frame({"text": "a"}),
                frame({"text": "b", "thoughtSignature": "s2"}),
                frame({"text": "c"}, {"text": ""}),
                frame({"text": "", "thoughtSignature": "s3"}, finish="STOP"),
            ]
        )
    )
    deltas, response = await drain(gemini(), request())
    assert deltas == [
        ThinkingDelta("plan "),
        ThinkingDelta("it"),
        TextDelta("a"),
        TextDelta("b"),
        TextDelta("c"),
    ]
    assert response.message.content == (
        ThinkingBlock("plan it", "s1"),
        TextBlock("ab", "s2"),
        TextBlock("c", "s3"),
    )


async def test_usage_counts_thoughts_as_output_and_cache_apart(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    usage = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 127,
    }
    server.add(FakeReply(text="ok", usage=usage))
    _, response = await drain(gemini(), request())
    assert response.usage == Usage(input_tokens=40, output_tokens=27, cache_read_tokens=60)


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ("STOP", "end_turn"),
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("BLOCKLIST", "refusal"),
        ("PROHIBITED_CONTENT", "refusal"),
        ("SPII", "refusal"),
        ("OTHER", "end_turn"),
    ],
)
async def test_finish_reasons_are_mapped(
    server: FakeLLMServer, gemini: MakeGemini, raw: str, finish: str
) -> None:
    server.add(FakeReply(text="partial", finish_reason=raw))
    _, response = await drain(gemini(), request())
    assert (response.finish, response.raw_finish) == (finish, raw)


async def test_blocked_candidate_without_content_is_a_refusal(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    server.add(FakeReply(finish_reason="SAFETY"))
    _, response = await drain(gemini(), request())
    assert (response.finish, response.message.content) == ("refusal", ())


async def test_blocked_prompt_is_a_refusal(server: FakeLLMServer, gemini: MakeGemini) -> None:
    blocked = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
    }
    server.add(FakeReply(raw_events=[blocked]))
    _, response = await drain(gemini(), request())
    assert (response.finish, response.raw_finish) == ("refusal", "PROHIBITED_CONTENT")
    assert response.message.content == ()
    assert response.usage == Usage(input_tokens=12)


async def test_plain_json_answer_is_accepted(server: FakeLLMServer, gemini: MakeGemini) -> None:
    """A server (or proxy) that ignores ``alt=sse`` answers with one JSON object."""
    server.add(
        FakeReply(
            text="whole answer",
            reasoning="brief",
            tool_calls=[FakeToolCall("ls", {"path": "."}, id="fc")],
            stream=False,
        )
    )
    deltas, response = await drain(gemini(), request())
    assert deltas == [ThinkingDelta("brief"), TextDelta("whole answer")]
    assert response.message.content == (
        ThinkingBlock("brief"),
        TextBlock("whole answer"),
        ToolUseBlock("fc", "ls", {"path": "."}),
    )
    assert response.finish == "tool_use"


async def test_json_array_answer_is_accepted() -> None:
    """``streamGenerateContent`` without ``alt=sse`` answers with a JSON array of responses."""
    body = [frame({"text": "one "}), frame({"text": "two"}, finish="STOP")]

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = ProviderSettings("g", "gemini", "https://example.invalid/v1beta", "m")
        deltas, response = await drain(create(settings, client), request())
    assert deltas == [TextDelta("one "), TextDelta("two")]
    assert response.message.text == "one two"


@tool(read_only=True)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def calculator(req: RecordedRequest) -> FakeReply:
    """Calls ``add`` (with no id, and a signature, as Gemini 3 does), then reports its result."""
    last = req.body["contents"][-1]["parts"]
    answer = next((p["functionResponse"] for p in last if "functionResponse" in p), None)
    if answer is None:
        call = FakeToolCall("add", {"a": 2, "b": 3}, id="")
        return FakeReply(tool_calls=[call], thinking_signature="c2ln")
    return FakeReply(text=f"The sum is {answer['response']['result']}.")


async def test_agent_loop_runs_a_tool_end_to_end(
    server: FakeLLMServer, gemini: MakeGemini, ctx: ToolContext
) -> None:
    server.add(calculator, calculator)
    agent = Agent(gemini(), "test-model", tools=ToolSet([add]), context=ctx)
    history = [Message.user("What is 2 + 3?")]
    events = [event async for event in agent.run(history)]
    done = events[-1]
    assert isinstance(done, Finished)
    assert (done.stop_reason, done.text) == ("end_turn", "The sum is 5.")
    server.assert_done()
    first, second = (r.body for r in server.requests)
    (declaration,) = first["tools"][0]["functionDeclarations"]
    assert declaration["parameters"]["properties"] == {
        "a": {"type": "INTEGER"},
        "b": {"type": "INTEGER"},
    }
    model_turn, results_turn = second["contents"][1:]
    (call_part,) = model_turn["parts"]
    call_id = call_part["functionCall"]["id"]
    assert call_part == {
        "functionCall": {"id": call_id, "name": "add", "args": {"a": 2, "b": 3}},
        "thoughtSignature": "c2ln",
    }
    assert results_turn == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": call_id, "name": "add", "response": {"result": "5"}}}
        ],
    }
    assert json.dumps(second).count(call_id) == 2
