"""Anthropic adapter, request side: the bodies and headers that reach the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from openheim.errors import ConfigError
from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    tool_results_message,
)
from openheim.providers.anthropic import create
from openheim.providers.base import NamedTool, ProviderSettings, ToolChoice, ToolSpec
from openheim.testing.fake_replies import FakeReply, FakeToolCall
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY, drain, request
from tests.providers.test_anthropic_support import MakeAnthropic, anthropic_factory, sent_body

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
LIST_DIR = ToolSpec("list_dir", "List a directory.", SCHEMA)
READ_FILE = ToolSpec("read_file", "Read a file.", SCHEMA)
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
async def anthropic(server: FakeLLMServer) -> AsyncIterator[MakeAnthropic]:
    async with anthropic_factory(server) as make:
        yield make


async def test_streaming_call_shape(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    body = await sent_body(server, anthropic())
    recorded = server.requests[-1]
    assert (recorded.method, recorded.path) == ("POST", "/v1/messages")
    assert body == {
        "model": "test-model",
        "max_tokens": 4096,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}],
            }
        ],
        "stream": True,
    }


async def test_headers_carry_the_key_and_version_only_where_they_belong(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    provider = anthropic(headers={"anthropic-beta": "fancy-feature-2099-01-01"})
    await sent_body(server, provider)
    recorded = server.requests[-1]
    headers = recorded.headers
    assert headers["x-api-key"] == API_KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == "fancy-feature-2099-01-01"
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"].startswith("openheim/")
    assert "authorization" not in headers
    assert API_KEY not in recorded.path
    assert API_KEY not in repr(provider) and API_KEY not in repr(provider.settings)


async def test_no_key_means_no_key_header(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    await sent_body(server, anthropic(api_key=None))
    assert "x-api-key" not in server.requests[-1].headers


async def test_cache_breakpoints_on_system_last_tool_and_latest_user_turn(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    history = (
        Message.user("first question"),
        Message.assistant("first answer"),
        Message.user("second question", ImageBlock("aGk=", "image/png")),
    )
    body = await sent_body(
        server, anthropic(), *history, system="Be brief.", tools=(LIST_DIR, READ_FILE)
    )
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]
    assert [tool.get("cache_control") for tool in body["tools"]] == [None, EPHEMERAL]
    assert body["tools"][0] == {
        "name": "list_dir",
        "description": "List a directory.",
        "input_schema": SCHEMA,
    }
    marked = [
        (i, j)
        for i, message in enumerate(body["messages"])
        for j, block in enumerate(message["content"])
        if "cache_control" in block
    ]
    assert marked == [(2, 1)]  # the image closing the latest user turn
    assert "tool_choice" not in body  # auto is the API's default


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        (NamedTool("read_file"), {"type": "tool", "name": "read_file"}),
    ],
)
async def test_tool_choice_mapping(
    server: FakeLLMServer, anthropic: MakeAnthropic, choice: ToolChoice, wire: dict[str, Any]
) -> None:
    body = await sent_body(server, anthropic(), tools=(LIST_DIR, READ_FILE), tool_choice=choice)
    assert body["tool_choice"] == wire


async def test_no_tools_means_no_tools_and_no_tool_choice(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    body = await sent_body(server, anthropic(), tool_choice="none")
    assert "tools" not in body and "tool_choice" not in body


async def test_history_is_converted(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    history = (
        Message.user("look at this", ImageBlock("iVBORw0KGgo=", "image/png")),
        Message(
            "assistant",
            (
                TextBlock("Reading two files."),
                ToolUseBlock("toolu_a", "read_file", {"path": "a.txt"}),
                ToolUseBlock("toolu_b", "read_file", {}, raw_arguments='{"path": '),
            ),
        ),
        tool_results_message(
            [
                ToolResultBlock("toolu_a", "contents of a"),
                ToolResultBlock("toolu_b", "invalid arguments", is_error=True),
            ],
            TextBlock("also: hurry"),
        ),
    )
    body = await sent_body(server, anthropic(), *history)
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    call_a = {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.txt"}}
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look at this"},
                {"type": "image", "source": image},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading two files."},
                call_a,
                {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "contents of a"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "invalid arguments",
                    "is_error": True,
                },
                {"type": "text", "text": "also: hurry", "cache_control": EPHEMERAL},
            ],
        },
    ]


async def test_roles_alternate_and_empty_blocks_are_dropped(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    history = (
        Message.user("one"),
        Message.user("two"),
        Message("assistant", (ThinkingBlock("no signature: another provider's"), TextBlock(""))),
        Message("user", (TextBlock("three"), ToolResultBlock("toolu_x", ""))),
    )
    body = await sent_body(server, anthropic(), *history)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_x"},
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"},
                {"type": "text", "text": "three", "cache_control": EPHEMERAL},
            ],
        }
    ]


async def test_thinking_round_trips_byte_for_byte(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    signature = "EqQBCkgIARABGAIiQL+/sig=="
    redacted = "EmwKAhgBEgy3va3pzix/LafPsn4a+/=="
    server.add(
        FakeReply(
            reasoning="I should list the directory.",
            thinking_signature=signature,
            redacted_thinking=[redacted],
            text="Listing.",
            tool_calls=[FakeToolCall("list_dir", {"path": "."}, id="toolu_1")],
        ),
        "Two files.",
    )
    provider = anthropic(thinking=2048)
    history = [Message.user("what is here?")]
    _, first = await drain(provider, request(*history, tools=(LIST_DIR,)))
    history += [first.message, tool_results_message([ToolResultBlock("toolu_1", "a\nb")])]
    await drain(provider, request(*history, tools=(LIST_DIR,)))
    assistant = server.requests[1].body["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "I should list the directory.",
                "signature": signature,
            },
            {"type": "redacted_thinking", "data": redacted},
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {"path": "."}},
        ],
    }
    assert f'"signature":"{signature}"'.encode() in server.requests[1].raw_body
    assert server.requests[1].last_tool_result == "a\nb"


@pytest.mark.parametrize(
    ("thinking", "max_tokens", "wire", "wire_max"),
    [
        ("adaptive", None, {"type": "adaptive", "display": "summarized"}, 16000),
        ("adaptive", 3000, {"type": "adaptive", "display": "summarized"}, 3000),
        (8000, None, {"type": "enabled", "budget_tokens": 8000}, 8000 + 4096),
        ("8000", 20000, {"type": "enabled", "budget_tokens": 8000}, 20000),
        (8000, 1000, {"type": "enabled", "budget_tokens": 8000}, 9000),
        (500, None, {"type": "enabled", "budget_tokens": 1024}, 4096),
        ("off", 1000, None, 1000),
        (0, None, None, 4096),
        (None, None, None, 4096),
    ],
)
async def test_thinking_settings(
    server: FakeLLMServer,
    anthropic: MakeAnthropic,
    thinking: str | int | None,
    max_tokens: int | None,
    wire: dict[str, Any] | None,
    wire_max: int,
) -> None:
    body = await sent_body(server, anthropic(thinking=thinking, max_tokens=max_tokens))
    assert body.get("thinking") == wire
    assert body["max_tokens"] == wire_max


async def test_request_max_tokens_wins_over_settings(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    body = await sent_body(server, anthropic(max_tokens=999), max_tokens=123)
    assert body["max_tokens"] == 123


async def test_thinking_drops_temperature(server: FakeLLMServer, anthropic: MakeAnthropic) -> None:
    plain = await sent_body(server, anthropic(), temperature=0.2)
    thinking = await sent_body(server, anthropic(thinking="adaptive"), temperature=0.2)
    assert plain["temperature"] == 0.2
    assert "temperature" not in thinking and "thinking" in thinking


async def test_forced_tool_choice_turns_thinking_off_for_the_call(
    server: FakeLLMServer, anthropic: MakeAnthropic
) -> None:
    provider = anthropic(thinking=4096)
    forced = await sent_body(server, provider, tools=(LIST_DIR,), tool_choice="required")
    free = await sent_body(server, provider, tools=(LIST_DIR,))
    assert "thinking" not in forced and forced["max_tokens"] == 4096
    assert free["thinking"] == {"type": "enabled", "budget_tokens": 4096}


def test_unknown_thinking_setting_is_a_config_error(server: FakeLLMServer) -> None:
    settings = ProviderSettings("claude", "anthropic", server.base_url, "m", thinking="lots")
    with pytest.raises(ConfigError, match="thinking = 'lots'") as caught:
        create(settings)
    assert "adaptive" in (caught.value.hint or "")


def test_api_base_must_be_a_url() -> None:
    with pytest.raises(ConfigError, match="api_base"):
        create(ProviderSettings("claude", "anthropic", "api.anthropic.com/v1", "m"))
