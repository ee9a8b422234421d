"""Anthropic adapter, response side: what we parse out of real event streams on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from openheim.events import TextDelta, ThinkingDelta
from openheim.messages import TextBlock, ThinkingBlock, ToolUseBlock, Usage
from openheim.testing.fake_replies import FakeReply, FakeToolCall
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import drain, request
from tests.providers.test_anthropic_support import MakeAnthropic, anthropic_factory

pytestmark = pytest.mark.usefixtures("each_transport")


@pytest.fixture
async def anthropic(server: FakeLLMServer) -> AsyncIterator[MakeAnthropic]:
    async with anthropic_factory(server) as make:
        yield make


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def block_start(index: int, kind: str, **block: Any) -> dict[str, Any]:
    return event("content_block_start", index=index, content_block=event(kind, **block))


def block_delta(index: int, **delta: Any) -> dict[str, Any]:
    return event("content_block_delta", index=index, delta=delta)


def message_end(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    usage = {"output_tokens": output_tokens}
    return [
        event("message_delta", delta={"stop_reason": stop_reason}, usage=usage),
        event("message_stop"),
    ]


async def test_text_streams_as_several_deltas(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(chunks=["Hel", "lo, ", "world", "!"]))
    deltas, response = await drain(anthropic(), request())
    assert deltas == [TextDelta("Hel"), TextDelta("lo, "), TextDelta("world"), TextDelta("!")]
    assert response.message.role == "assistant"
    assert response.message.content == (TextBlock("Hello, world!"),)
    assert (response.finish, response.raw_finish) == ("end_turn", "end_turn")
    assert response.model == "test-model"
    assert server.requests[-1].path == "/v1/messages"


async def test_two_tool_calls_are_assembled_from_many_fragments(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    grep_args = {"pattern": "TODO|FIXME", "path": "src/openheim", "max_hits": 20}
    read_args = {"path": "README.md", "offset": 0, "limit": 400, "hidden": False}
    server.add(
        FakeReply(
            text="Looking.",
            tool_calls=[
                FakeToolCall("grep", grep_args, id="toolu_01"),
                FakeToolCall("read_file", read_args, id="toolu_02"),
            ],
        )
    )
    deltas, response = await drain(anthropic(), request())
    assert deltas == [TextDelta("Looking.")]
    assert response.message.content == (
        TextBlock("Looking."),
        ToolUseBlock("toolu_01", "grep", grep_args),
        ToolUseBlock("toolu_02", "read_file", read_args),
    )
    assert (response.finish, response.raw_finish) == ("tool_use", "tool_use")


async def test_interleaved_and_tiny_json_fragments_are_joined_by_index(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    text = '{"path": "a/b.txt", "n": 3}'
    fragments = [
        block_delta(index, type="input_json_delta", partial_json=char)
        for char in text
        for index in (0, 1)
    ]
    server.add(
        FakeReply(
            raw_events=[
                event("message_start", message={"model": "claude-x", "usage": {}}),
                block_start(0, "tool_use", id="t0", name="a", input={}),
                block_start(1, "tool_use", id="t1", name="b", input={}),
                *fragments,
                event("content_block_stop", index=0),
                event("content_block_stop", index=1),
                *message_end("tool_use", 9),
            ]
        )
    )
    _, response = await drain(anthropic(), request())
    expected = {"path": "a/b.txt", "n": 3}
    assert response.message.tool_uses == (
        ToolUseBlock("t0", "a", expected),
        ToolUseBlock("t1", "b", expected),
    )
    assert response.model == "claude-x"


@pytest.mark.parametrize("raw", ['{"path": "a"', "[1, 2]", '"just a string"'])
async def test_arguments_that_are_not_an_object_are_kept_raw(
    server: FakeLLMServer, anthropic: MakeAnthropic, raw: str
) -> None:
    server.add(FakeReply(tool_calls=[FakeToolCall("read_file", raw, id="toolu_r")]))
    _, response = await drain(anthropic(), request())
    (call,) = response.message.tool_uses
    assert (call.arguments, call.raw_arguments) == ({}, raw)


async def test_tool_call_without_arguments_is_an_empty_object(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(FakeReply(tool_calls=[FakeToolCall("list_dir", "", id="toolu_e")]))
    _, response = await drain(anthropic(), request())
    assert response.message.tool_uses == (ToolUseBlock("toolu_e", "list_dir", {}),)


async def test_thinking_keeps_its_signature_and_redacted_blocks(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(
        FakeReply(
            text="42",
            reasoning="Six times seven.",
            thinking_signature="EqQBCkgIARABGAIiQL+sig==",
            redacted_thinking=["EmwKAhgBEgy3va3pzix/LafPsn4a"],
        )
    )
    deltas, response = await drain(anthropic(), request())
    assert deltas == [
        ThinkingDelta("Six "),
        ThinkingDelta("times "),
        ThinkingDelta("seven."),
        TextDelta("42"),
    ]
    assert response.message.content == (
        ThinkingBlock("Six times seven.", "EqQBCkgIARABGAIiQL+sig=="),
        ThinkingBlock("", "EmwKAhgBEgy3va3pzix/LafPsn4a", redacted=True),
        TextBlock("42"),
    )


async def test_usage_counts_cache_reads_and_writes_apart(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    usage = {
        "input_tokens": 21,
        "output_tokens": 34,
        "cache_creation_input_tokens": 1800,
        "cache_read_input_tokens": 12000,
    }
    server.add(FakeReply(text="cached", usage=usage))
    _, response = await drain(anthropic(), request())
    assert response.usage == Usage(
        input_tokens=21, output_tokens=34, cache_read_tokens=12000, cache_write_tokens=1800
    )


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("pause_turn", "pause_turn"),
        ("model_context_window_exceeded", "max_tokens"),
        ("something_new", "end_turn"),
    ],
)
async def test_stop_reasons_are_mapped(
    server: FakeLLMServer, anthropic: MakeAnthropic, raw: str, finish: str
) -> None:
    server.add(FakeReply(text="x", finish_reason=raw))
    _, response = await drain(anthropic(), request())
    assert (response.finish, response.raw_finish) == (finish, raw)


async def test_unknown_events_and_blocks_are_ignored(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(
        FakeReply(
            raw_events=[
                event("message_start", message={"usage": {"input_tokens": 3}}),
                event("ping"),
                block_start(0, "server_tool_use", id="s"),
                event("content_block_stop", index=0),
                block_start(1, "text", text=""),
                block_delta(1, type="text_delta", text="done"),
                block_delta(1, type="citations_delta", citation={}),
                event("content_block_stop", index=1),
                event("brand_new_event", anything=True),
                *message_end("end_turn", 2),
            ]
        )
    )
    deltas, response = await drain(anthropic(), request())
    assert deltas == [TextDelta("done")]
    assert response.message.content == (TextBlock("done"),)
    assert response.usage == Usage(input_tokens=3, output_tokens=2)


async def test_plain_json_message_is_accepted(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add(
        FakeReply(
            text="Listing.",
            reasoning="Need files.",
            thinking_signature="sig-j",
            tool_calls=[FakeToolCall("list_dir", {"path": "."}, id="toolu_j")],
            usage={"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 100},
            stream=False,
        )
    )
    deltas, response = await drain(anthropic(), request())
    assert deltas == [ThinkingDelta("Need files."), TextDelta("Listing.")]
    assert response.message.content == (
        ThinkingBlock("Need files.", "sig-j"),
        TextBlock("Listing."),
        ToolUseBlock("toolu_j", "list_dir", {"path": "."}),
    )
    assert response.usage == Usage(input_tokens=7, output_tokens=3, cache_read_tokens=100)
    assert response.finish == "tool_use"


async def test_one_provider_makes_consecutive_calls(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    server.add("one", "two")
    provider = anthropic()
    first = (await drain(provider, request()))[1]
    second = (await drain(provider, request()))[1]
    assert (first.message.text, second.message.text) == ("one", "two")
    server.assert_done()
