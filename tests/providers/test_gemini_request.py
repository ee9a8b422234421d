"""Gemini adapter, request side: the URLs, headers and bodies that reach the server."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
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
from openheim.providers.base import (
    ModelRequest,
    NamedTool,
    ProviderSettings,
    ToolChoice,
    ToolSpec,
)
from openheim.providers.gemini_wire import gemini_schema
from openheim.testing.fake_replies import FakeReply
from openheim.testing.fake_server import FakeLLMServer
from openheim.tools.decorator import tool
from tests.providers.support import API_KEY, drain, request
from tests.providers.test_gemini_support import MakeGemini, gemini_factory

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
LIST_DIR = ToolSpec("list_dir", "List a directory.", SCHEMA)


@pytest.fixture
def sent_urls() -> list[httpx.URL]:
    """The URL of every request the ``gemini`` providers send, as the client saw it."""
    return []


@pytest.fixture
async def gemini(server: FakeLLMServer, sent_urls: list[httpx.URL]) -> AsyncIterator[MakeGemini]:
    """Gemini providers on one client that records every URL it sends to."""

    async def record(req: httpx.Request) -> None:
        sent_urls.append(req.url)

    async with (
        httpx.AsyncClient(timeout=10, event_hooks={"request": [record]}) as client,
        gemini_factory(server, client) as make,
    ):
        yield make


async def sent_body(
    server: FakeLLMServer, gemini: MakeGemini, *messages: Message, **kw: Any
) -> Any:
    """Make one call and return the JSON body the server received."""
    server.add("ok")
    await drain(gemini(**kw.pop("settings", {})), request(*messages, **kw))
    return server.requests[-1].body


async def test_streaming_call_shape(
    server: FakeLLMServer, gemini: MakeGemini, sent_urls: list[httpx.URL]
) -> None:
    body = await sent_body(server, gemini)
    recorded = server.requests[-1]
    assert (recorded.method, recorded.path) == (
        "POST",
        "/v1beta/models/test-model:streamGenerateContent",
    )
    assert body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert recorded.headers["x-goog-api-key"] == API_KEY
    assert "authorization" not in recorded.headers
    (url,) = sent_urls
    assert url.query == b"alt=sse"
    assert API_KEY not in str(url) and "key=" not in str(url)


async def test_models_prefix_is_not_doubled(server: FakeLLMServer, gemini: MakeGemini) -> None:
    server.add("ok")
    await drain(gemini(), ModelRequest("models/gemini-x", (Message.user("hi"),)))
    assert server.requests[-1].path == "/v1beta/models/gemini-x:streamGenerateContent"


async def test_no_key_means_no_key_header(server: FakeLLMServer, gemini: MakeGemini) -> None:
    await sent_body(server, gemini, settings={"api_key": None, "headers": {"X-Extra": "1"}})
    headers = server.requests[-1].headers
    assert "x-goog-api-key" not in headers
    assert headers["x-extra"] == "1"


async def test_system_and_generation_config(server: FakeLLMServer, gemini: MakeGemini) -> None:
    body = await sent_body(server, gemini, system="Be brief.", max_tokens=256, temperature=0.2)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 256, "temperature": 0.2}


async def test_settings_max_tokens_is_the_fallback(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    body = await sent_body(server, gemini, settings={"max_tokens": 99})
    assert body["generationConfig"] == {"maxOutputTokens": 99}


@pytest.mark.parametrize(
    ("thinking", "config"),
    [
        ("adaptive", {"thinkingBudget": -1, "includeThoughts": True}),
        ("off", {"thinkingBudget": 0}),
        (2048, {"thinkingBudget": 2048, "includeThoughts": True}),
    ],
)
async def test_thinking_setting(
    server: FakeLLMServer, gemini: MakeGemini, thinking: str | int, config: dict[str, Any]
) -> None:
    body = await sent_body(server, gemini, settings={"thinking": thinking})
    assert body["generationConfig"] == {"thinkingConfig": config}


@pytest.mark.parametrize("thinking", ["lots", -5, True])
def test_bad_thinking_setting_fails_at_creation(thinking: Any) -> None:
    settings = ProviderSettings("gem", "gemini", "https://x.invalid/v1beta", "m", thinking=thinking)
    with pytest.raises(ConfigError, match="not a thinking setting") as caught:
        create_provider(settings)
    assert "adaptive" in (caught.value.hint or "")


def test_api_base_must_be_a_url() -> None:
    with pytest.raises(ConfigError, match="api_base"):
        create_provider(ProviderSettings("gem", "gemini", "generativelanguage", "m"))


async def test_no_tools_means_no_tools_and_no_tool_config(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    body = await sent_body(server, gemini, tool_choice="none")
    assert "tools" not in body and "toolConfig" not in body


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", None),
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        (
            NamedTool("list_dir"),
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["list_dir"]}},
        ),
    ],
)
async def test_tool_choice_mapping(
    server: FakeLLMServer, gemini: MakeGemini, choice: ToolChoice, config: Any
) -> None:
    body = await sent_body(server, gemini, tools=(LIST_DIR,), tool_choice=choice)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "list_dir",
                    "description": "List a directory.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"path": {"type": "STRING"}},
                        "required": ["path"],
                    },
                }
            ]
        }
    ]
    assert body.get("toolConfig") == config


def test_schema_conversion_drops_what_gemini_lacks() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": ["string", "null"], "description": "Who.", "maxLength": 40},
            "mode": {"enum": ["fast", "slow"]},
            "level": {"enum": [1, 2, 3], "description": "How hard."},
            "fixed": {"const": "yes"},
            "tags": {"type": "array", "items": {"type": "string", "format": "uri"}},
            "either": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "nested": {
                "properties": {"x": {"type": "number", "exclusiveMinimum": 0}},
                "additionalProperties": {"type": "string"},
            },
        },
        "required": ["name"],
    }
    assert gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "name": {"type": "STRING", "nullable": True, "description": "Who.", "maxLength": 40},
            "mode": {"type": "STRING", "enum": ["fast", "slow"]},
            "level": {"type": "INTEGER", "description": "How hard. (one of: 1, 2, 3)"},
            "fixed": {"type": "STRING", "enum": ["yes"]},
            "tags": {"type": "ARRAY", "items": {"type": "STRING", "format": "uri"}},
            "either": {"anyOf": [{"type": "INTEGER"}, {"type": "BOOLEAN"}]},
            "nested": {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}},
        },
        "required": ["name"],
    }


async def test_decorated_tools_are_declared_in_gemini_terms(
    server: FakeLLMServer, gemini: MakeGemini
) -> None:
    @tool
    def search(query: str, kind: Literal["file", "dir"] = "file", limit: int | None = None) -> str:
        """Search the tree.

        Args:
            query: What to look for.
        """
        return ""

    @tool
    def now() -> str:
        """The current time."""
        return ""

    body = await sent_body(server, gemini, tools=(search.spec, now.spec))
    first, second = body["tools"][0]["functionDeclarations"]
    assert first == {
        "name": "search",
        "description": "Search the tree.",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "query": {"type": "STRING", "description": "What to look for."},
                "kind": {"type": "STRING", "enum": ["file", "dir"]},
                "limit": {"type": "INTEGER"},
            },
            "required": ["query"],
        },
    }
    assert second == {"name": "now", "description": "The current time."}


async def test_conversation_becomes_contents(server: FakeLLMServer, gemini: MakeGemini) -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    history = (
        Message.user("What is in this picture?", ImageBlock(png, "image/png")),
        Message(
            "assistant",
            (
                ThinkingBlock("Look closely.", "sig-think"),
                ThinkingBlock("", "opaque", redacted=True),
                TextBlock("Checking.", "sig-text"),
                TextBlock(""),
                ToolUseBlock("fc_1", "zoom", {"factor": 2}, signature="sig-call"),
                ToolUseBlock("fc_2", "crop", {}),
            ),
        ),
        Message(
            "user",
            (
                ToolResultBlock("fc_1", "zoomed"),
                ToolResultBlock("fc_2", "out of bounds", is_error=True),
                TextBlock("Hurry."),
            ),
        ),
    )
    body = await sent_body(server, gemini, *history)
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is in this picture?"},
                {"inlineData": {"mimeType": "image/png", "data": png}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Look closely.", "thought": True, "thoughtSignature": "sig-think"},
                {"text": "Checking.", "thoughtSignature": "sig-text"},
                {
                    "functionCall": {"id": "fc_1", "name": "zoom", "args": {"factor": 2}},
                    "thoughtSignature": "sig-call",
                },
                {"functionCall": {"id": "fc_2", "name": "crop", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "fc_1",
                        "name": "zoom",
                        "response": {"result": "zoomed"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "fc_2",
                        "name": "crop",
                        "response": {"error": "out of bounds"},
                    }
                },
                {"text": "Hurry."},
            ],
        },
    ]


async def test_signatures_go_back_byte_for_byte(server: FakeLLMServer, gemini: MakeGemini) -> None:
    """Every signed part of a reply reappears, signature unchanged, in the next request."""
    signatures = [base64.b64encode(bytes([i]) * 40 + b"\xff\xfe").decode() for i in range(3)]
    parts = [
        {"text": "Thinking it over.", "thought": True, "thoughtSignature": signatures[0]},
        {"text": "Let me look.", "thoughtSignature": signatures[1]},
        {
            "functionCall": {"name": "ls", "args": {"path": "."}, "id": "fc_9"},
            "thoughtSignature": signatures[2],
        },
    ]
    reply = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    server.add(FakeReply(raw_events=[reply]), "done")
    provider = gemini()
    _, first = await drain(provider, request())
    history = (
        Message.user("hi"),
        first.message,
        Message("user", (ToolResultBlock("fc_9", "a.txt"),)),
    )
    await drain(provider, request(*history))
    second = server.requests[1]
    assert second.body["contents"][1] == {"role": "model", "parts": parts}
    assert all(signature.encode() in second.raw_body for signature in signatures)
