"""OpenAI chat adapter, response side: what we parse out of real streams on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from openheim.events import TextDelta, ThinkingDelta
from openheim.messages import TextBlock, ThinkingBlock, ToolUseBlock
from openheim.testing.fake_replies import FakeReply, FakeToolCall
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.conftest import MakeProvider
from tests.providers.support import drain, request

pytestmark = pytest.mark.usefixtures("each_transport")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call_fragment(index: int, arguments: str, **head: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if "name" in head:
        function["name"] = head.pop("name")
    return chunk({"tool_calls": [{"index": index, **head, "function": function}]})


async def test_text_streams_as_several_deltas(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(chunks=["Hel", "lo, ", "world", "!"]))
    deltas, response = await drain(make_provider(), request())
    assert deltas == [TextDelta("Hel"), TextDelta("lo, "), TextDelta("world"), TextDelta("!")]
    assert response.message.role == "assistant"
    assert response.message.content == (TextBlock("Hello, world!"),)
    assert (response.finish, response.raw_finish) == ("end_turn", "stop")
    assert response.model == "test-model"


async def test_tool_call_arguments_are_assembled_from_fragments(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    arguments = {"path": "src/openheim", "depth": 2, "hidden": False}
    server.add(FakeReply(tool_calls=[FakeToolCall("list_dir", arguments, id="call_abc")]))
    deltas, response = await drain(make_provider(), request())
    assert deltas == []
    assert response.message.content == (ToolUseBlock("call_abc", "list_dir", arguments),)
    assert (response.finish, response.raw_finish) == ("tool_use", "tool_calls")


async def test_repeated_id_and_name_are_not_concatenated(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(
            tool_calls=[FakeToolCall("read_file", {"path": "README.md"}, id="call_1")],
            repeat_tool_ids=True,
        )
    )
    _, response = await drain(make_provider(), request())
    assert response.message.tool_uses == (
        ToolUseBlock("call_1", "read_file", {"path": "README.md"}),
    )


async def test_two_parallel_tool_calls_keep_their_order(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(
            text="Reading both.",
            tool_calls=[
                FakeToolCall("read_file", {"path": "a.txt"}, id="call_a"),
                FakeToolCall("read_file", {"path": "b.txt"}, id="call_b"),
            ],
        )
    )
    _, response = await drain(make_provider(), request())
    assert response.message.text == "Reading both."
    assert response.message.tool_uses == (
        ToolUseBlock("call_a", "read_file", {"path": "a.txt"}),
        ToolUseBlock("call_b", "read_file", {"path": "b.txt"}),
    )


async def test_interleaved_fragments_are_joined_by_index(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(
            raw_events=[
                call_fragment(0, "", id="call_x", name="grep"),
                call_fragment(1, '{"path": "b"}', id="call_y", name="read_file"),
                call_fragment(0, '{"pattern": '),
                call_fragment(0, '"TODO"}'),
                chunk({}, "tool_calls"),
                "[DONE]",
            ]
        )
    )
    _, response = await drain(make_provider(), request())
    assert response.message.tool_uses == (
        ToolUseBlock("call_x", "grep", {"pattern": "TODO"}),
        ToolUseBlock("call_y", "read_file", {"path": "b"}),
    )


async def test_missing_ids_are_synthesised_and_unique(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(tool_calls=[FakeToolCall("a", {}, id=""), FakeToolCall("b", {"x": 1}, id="")])
    )
    _, response = await drain(make_provider(), request())
    ids = [call.id for call in response.message.tool_uses]
    assert ids == ["call_1", "call_2"]
    assert [call.arguments for call in response.message.tool_uses] == [{}, {"x": 1}]


@pytest.mark.parametrize("raw", ['{"path": "a"', "[1, 2]", '"just a string"'])
async def test_arguments_that_are_not_an_object_are_kept_raw(
    server: FakeLLMServer, make_provider: MakeProvider, raw: str
) -> None:
    server.add(FakeReply(tool_calls=[FakeToolCall("read_file", raw, id="call_r")]))
    _, response = await drain(make_provider(), request())
    (call,) = response.message.tool_uses
    assert (call.arguments, call.raw_arguments) == ({}, raw)
    assert call.arguments_json == raw


async def test_reasoning_content_becomes_thinking(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(text="42", reasoning="Six times seven."))
    deltas, response = await drain(make_provider(), request())
    assert deltas == [
        ThinkingDelta("Six "),
        ThinkingDelta("times "),
        ThinkingDelta("seven."),
        TextDelta("42"),
    ]
    assert response.message.content == (ThinkingBlock("Six times seven."), TextBlock("42"))


async def test_reasoning_field_also_becomes_thinking(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(
            raw_events=[chunk({"reasoning": "hmm"}), chunk({"content": "ok"}, "stop"), "[DONE]"]
        )
    )
    deltas, response = await drain(make_provider(), request())
    assert deltas == [ThinkingDelta("hmm"), TextDelta("ok")]
    assert response.message.content == (ThinkingBlock("hmm"), TextBlock("ok"))


async def test_usage_comes_from_the_usage_chunk(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 34,
        "total_tokens": 1234,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    server.add(FakeReply(text="cached", usage=usage))
    _, response = await drain(make_provider(), request())
    assert response.usage.input_tokens == 1200 - 1024  # fresh input only
    assert response.usage.output_tokens == 34
    assert response.usage.cache_read_tokens == 1024


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("eos_token", "end_turn"),
    ],
)
async def test_finish_reasons_are_mapped(
    server: FakeLLMServer, make_provider: MakeProvider, raw: str, finish: str
) -> None:
    server.add(FakeReply(text="x", finish_reason=raw))
    _, response = await drain(make_provider(), request())
    assert (response.finish, response.raw_finish) == (finish, raw)


async def test_tool_calls_with_finish_stop_still_mean_tool_use(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(tool_calls=[FakeToolCall("list_dir")], finish_reason="stop"))
    _, response = await drain(make_provider(), request())
    assert (response.finish, response.raw_finish) == ("tool_use", "stop")


async def test_plain_json_answer_is_accepted(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(
        FakeReply(
            text="Listing.",
            reasoning="Need files.",
            tool_calls=[FakeToolCall("list_dir", {"path": "."}, id="call_j")],
            stream=False,
        )
    )
    deltas, response = await drain(make_provider(), request())
    assert deltas == [ThinkingDelta("Need files."), TextDelta("Listing.")]
    assert response.message.tool_uses == (ToolUseBlock("call_j", "list_dir", {"path": "."}),)
    assert response.usage.input_tokens == 10
    assert response.finish == "tool_use"


async def test_stream_without_done_but_with_finish_is_complete(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add(FakeReply(raw_events=[chunk({"content": "fine"}), chunk({}, "stop")]))
    _, response = await drain(make_provider(), request())
    assert response.message.text == "fine"


async def test_slow_stream_is_not_cut_by_the_idle_timeout(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    # Each gap is well under the timeout; the whole stream takes longer than it.
    server.add(FakeReply(chunks=["a", "b", "c", "d", "e"], chunk_delay=0.1))
    _, response = await drain(make_provider(timeout_secs=0.5), request())
    assert response.message.text == "abcde"


async def test_one_provider_makes_consecutive_calls(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    server.add("one", "two")
    provider = make_provider()
    first = (await drain(provider, request()))[1]
    second = (await drain(provider, request()))[1]
    assert (first.message.text, second.message.text) == ("one", "two")
    assert server.unexpected_requests == []
