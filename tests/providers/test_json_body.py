"""Request bodies with their tool list encoded once (``providers.json_body``), and the POST
built from parts an HTTP provider keeps (``HTTPProvider._request``)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from openheim.messages import Message
from openheim.providers import anthropic_wire, gemini_wire, openai_wire
from openheim.providers.base import ModelRequest, NamedTool, ProviderSettings, ToolSpec
from openheim.providers.json_body import RawJSON, ToolsJSON, dumps, encode
from openheim.providers.openai_chat import OpenAIChatProvider

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS = (ToolSpec("read", "Read a file.", SCHEMA), ToolSpec("list", "List «a» dir.", SCHEMA))
SETTINGS = ProviderSettings(
    name="p", kind="openai", api_base="http://127.0.0.1:9/v1", model="m", max_tokens=64
)


def test_encode_gives_what_httpx_sends_for_a_plain_body() -> None:
    body = {"model": "m", "text": "naïve ✓", "n": [1, 2.5, None, True]}
    assert encode(body) == dumps(body).encode()
    assert encode(body) == httpx.Request("POST", "http://x/", json=body).content


@pytest.mark.parametrize(
    "body",
    [
        {"tools": RawJSON('[{"a":1}]')},
        {"model": "m", "tools": RawJSON("[]"), "stream": True},
        {"a": RawJSON("1"), "b": {"c": "d"}, "e": RawJSON('"f"')},
    ],
)
def test_raw_members_are_spliced_in_as_json(body: dict[str, Any]) -> None:
    expected = {k: json.loads(v.text) if isinstance(v, RawJSON) else v for k, v in body.items()}
    assert json.loads(encode(body)) == expected


def test_a_raw_member_never_passes_as_a_string() -> None:
    with pytest.raises(TypeError):
        dumps({"tools": RawJSON("[]")})


def test_tools_are_converted_once_per_list() -> None:
    calls: list[int] = []

    def convert(specs: tuple[ToolSpec, ...]) -> list[str]:
        calls.append(len(specs))
        return [s.name for s in specs]

    cached = ToolsJSON(convert)
    first = cached(TOOLS)
    again = cached(tuple(ToolSpec(s.name, s.description, s.parameters) for s in TOOLS))
    assert first is again and json.loads(first.text) == ["read", "list"]
    assert calls == [2]
    other_schema = ToolSpec("read", "Read a file.", dict(SCHEMA))  # equal but another object
    renamed = ToolSpec("lire", "Read a file.", SCHEMA)
    assert json.loads(cached((other_schema,)).text) == ["read"]
    assert json.loads(cached((renamed,)).text) == ["lire"]
    assert calls == [2, 1, 1]


@pytest.mark.parametrize("choice", ["auto", "required", NamedTool("read")])
def test_encoded_bodies_equal_the_built_ones(choice: Any) -> None:
    request = ModelRequest(
        "m", (Message.user("hi"),), system="be brief", tools=TOOLS, tool_choice=choice
    )
    dialect = openai_wire.dialect_for("openai")
    pairs = [
        (
            openai_wire.encode_body(request, SETTINGS, dialect),
            openai_wire.build_body(request, SETTINGS, dialect),
        ),
        (
            anthropic_wire.encode_body(request, SETTINGS, 4000),
            anthropic_wire.build_body(request, SETTINGS, 4000),
        ),
        (gemini_wire.encode_body(request, SETTINGS), gemini_wire.build_body(request, SETTINGS)),
    ]
    for encoded, built in pairs:
        assert json.loads(encoded) == built
    plain = ModelRequest("m", (Message.user("hi"),))
    assert openai_wire.encode_body(plain, SETTINGS, dialect) == encode(
        openai_wire.build_body(plain, SETTINGS, dialect)
    )


async def test_the_kept_post_equals_the_clients_own() -> None:
    async with httpx.AsyncClient(headers={"X-Default": "1"}, timeout=7) as client:
        provider = OpenAIChatProvider(SETTINGS, client)
        for _ in range(2):  # made, then from the parts kept
            made = provider._request(provider.url, b'{"a":1}')
            built = client.build_request(
                "POST", provider.url, content=b'{"a":1}', headers=provider._post_headers()
            )
            assert made.url == built.url
            assert made.headers.multi_items() == built.headers.multi_items()
            assert made.content == built.content
            assert made.extensions == built.extensions
        client.headers["X-Default"] = "2"
        assert provider._request(provider.url, b"{}").headers["x-default"] == "2"
        assert made.headers["content-type"] == "application/json"


async def test_a_client_with_cookies_or_params_builds_its_own_post() -> None:
    async with httpx.AsyncClient(params={"k": "v"}) as client:
        provider = OpenAIChatProvider(SETTINGS, client)
        assert provider._request(provider.url, b"{}").url.params["k"] == "v"
    async with httpx.AsyncClient(cookies={"c": "1"}) as client:
        provider = OpenAIChatProvider(SETTINGS, client)
        assert provider._request(provider.url, b"{}").headers["cookie"] == "c=1"
