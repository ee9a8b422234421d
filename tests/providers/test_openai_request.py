"""OpenAI chat adapter, request side: the bodies and headers that reach the server."""

from __future__ import annotations

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
)
from openheim.providers import create_provider
from openheim.providers.base import NamedTool, ProviderSettings, ToolChoice, ToolSpec
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.conftest import MakeProvider
from tests.providers.support import API_KEY, drain, request

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
LIST_DIR = ToolSpec("list_dir", "List a directory.", SCHEMA)


async def sent_body(server: FakeLLMServer, make_provider: MakeProvider, **kw: Any) -> Any:
    """Make one call and return the JSON body the server received."""
    kind = kw.pop("kind", "openai_compatible")
    provider = make_provider(kind, **kw.pop("settings", {}))
    server.add("ok")
    await drain(provider, request(*kw.pop("messages", ()), **kw))
    return server.requests[-1].body


async def test_streaming_call_shape(server: FakeLLMServer, make_provider: MakeProvider) -> None:
    body = await sent_body(server, make_provider)
    recorded = server.requests[-1]
    assert (recorded.method, recorded.path) == ("POST", "/v1/chat/completions")
    assert body == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("kind", "field", "absent"),
    [
        ("openai", "max_completion_tokens", "max_tokens"),
        ("openai_compatible", "max_tokens", "max_completion_tokens"),
    ],
)
async def test_max_tokens_field_depends_on_kind(
    server: FakeLLMServer, make_provider: MakeProvider, kind: str, field: str, absent: str
) -> None:
    body = await sent_body(server, make_provider, kind=kind, max_tokens=256, temperature=0.2)
    assert body[field] == 256
    assert absent not in body
    assert body["temperature"] == 0.2


async def test_settings_max_tokens_is_the_fallback(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    body = await sent_body(server, make_provider, settings={"max_tokens": 99})
    assert body["max_tokens"] == 99


async def test_no_tools_means_no_tools_and_no_tool_choice(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    body = await sent_body(server, make_provider, tool_choice="none")
    assert "tools" not in body and "tool_choice" not in body


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", None),
        ("none", "none"),
        ("required", "required"),
        (NamedTool("list_dir"), {"type": "function", "function": {"name": "list_dir"}}),
    ],
)
async def test_tools_and_tool_choice(
    server: FakeLLMServer, make_provider: MakeProvider, choice: ToolChoice, expected: Any
) -> None:
    body = await sent_body(server, make_provider, tools=(LIST_DIR,), tool_choice=choice)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "list_dir",
                "description": "List a directory.",
                "parameters": SCHEMA,
            },
        }
    ]
    assert body.get("tool_choice") == expected


async def test_history_is_converted(server: FakeLLMServer, make_provider: MakeProvider) -> None:
    history = (
        Message.user("List and read."),
        Message(
            "assistant",
            (
                ThinkingBlock("private reasoning", signature="sig"),
                TextBlock("On it."),
                ToolUseBlock("call_1", "list_dir", {"path": "."}),
                ToolUseBlock("call_2", "read_file", {}, raw_arguments='{"path": '),
            ),
        ),
        Message(
            "user",
            (
                ToolResultBlock("call_1", "a.txt\nb.txt"),
                ToolResultBlock("call_2", "arguments are not JSON", is_error=True),
                TextBlock("Also, be brief."),
            ),
        ),
    )
    body = await sent_body(server, make_provider, system="You are terse.", messages=history)
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "List and read."},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": '{"path":"."}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": '},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: arguments are not JSON"},
        {"role": "user", "content": "Also, be brief."},
    ]
    assert "private reasoning" not in server.requests[-1].raw_body.decode()


async def test_assistant_with_only_tool_calls_has_null_content(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    history = (
        Message.user("go"),
        Message("assistant", (ToolUseBlock("c1", "list_dir", {}),)),
        Message("user", (ToolResultBlock("c1", ""),)),
    )
    body = await sent_body(server, make_provider, messages=history)
    assert body["messages"][1]["content"] is None
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": ""}
    assert len(body["messages"]) == 3


async def test_images_are_sent_as_data_urls(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    message = Message.user("What is this?", ImageBlock("iVBORw0KGgo=", "image/png"))
    body = await sent_body(server, make_provider, messages=(message,))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        }
    ]


async def test_headers_carry_the_key_and_custom_headers(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    await sent_body(server, make_provider, settings={"headers": {"X-Title": "openheim-tests"}})
    headers = server.requests[-1].headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["x-title"] == "openheim-tests"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "text/event-stream"
    assert headers["user-agent"].startswith("openheim/")
    assert API_KEY not in server.requests[-1].raw_body.decode()


async def test_no_key_means_no_authorization_header(
    server: FakeLLMServer, make_provider: MakeProvider
) -> None:
    await sent_body(server, make_provider, settings={"api_key": None})
    assert "authorization" not in server.requests[-1].headers


async def test_repr_hides_the_key(make_provider: MakeProvider) -> None:
    provider = make_provider()
    assert API_KEY not in repr(provider)
    assert "test-model" in repr(provider)


@pytest.mark.parametrize("kind", ["openai", "openai_compatible"])
async def test_registry_builds_the_adapter_for_both_kinds(kind: str) -> None:
    settings = ProviderSettings("p", kind, "http://127.0.0.1:1/v1", "m")
    provider = create_provider(settings)
    assert isinstance(provider, OpenAIChatProvider)
    assert provider.url == "http://127.0.0.1:1/v1/chat/completions"
    await provider.aclose()


def test_api_base_without_scheme_is_a_config_error() -> None:
    settings = ProviderSettings("local", "openai_compatible", "localhost:11434/v1", "m")
    with pytest.raises(ConfigError, match="api_base"):
        create_provider(settings)


@pytest.mark.parametrize(("kind", "sent"), [("openai", True), ("openai_compatible", False)])
async def test_reasoning_effort_only_for_openai(
    server: FakeLLMServer, make_provider: MakeProvider, kind: str, sent: bool
) -> None:
    body = await sent_body(server, make_provider, kind=kind, settings={"reasoning_effort": "low"})
    assert ("reasoning_effort" in body) is sent
    if sent:
        assert body["reasoning_effort"] == "low"
