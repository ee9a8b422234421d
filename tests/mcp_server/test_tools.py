"""``agent__NAME`` tools and the JSON-schema tools of ``openheim mcp serve``, over stdio."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from openheim.testing import FakeLLMServer, FakeReply
from tests.formats.test_schema_check import SECRET, remote
from tests.formats.test_schema_check import deep_schema as nested_schema
from tests.mcp_server.conftest import ServeClient
from tests.mcp_server.test_prompt_tool import text_of

__all__ = ["remote"]  # a fixture

REVIEWER = '+++\ndescription = "Reviews code for bugs."\n+++\nYou are a meticulous reviewer.\n'

ORDER: dict[str, Any] = {
    "type": "object",
    "required": ["id", "status", "lines"],
    "properties": {
        "id": {"type": "integer"},
        "status": {"enum": ["open", "shipped"]},
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/line"},
        },
    },
    "$defs": {
        "line": {
            "type": "object",
            "required": ["sku", "qty"],
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        }
    },
}


async def test_each_agent_profile_is_a_tool(
    serve: ServeClient, fake: FakeLLMServer, home: Path
) -> None:
    (home / "agents").mkdir()
    (home / "agents" / "reviewer.md").write_text(REVIEWER)
    (home / "agents" / "bad+name.md").write_text(REVIEWER)
    fake.add(FakeReply(text="looks fine"))
    async with serve() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("agent__reviewer", {"prompt": "review this"})
    assert [name for name in tools if name.startswith("agent__")] == ["agent__reviewer"]
    assert tools["agent__reviewer"].description == "Reviews code for bugs."
    assert set(tools["agent__reviewer"].input_schema["properties"]) == {
        "prompt",
        "session_id",
        "cwd",
    }
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("looks fine")
    system = fake.requests[0].body["messages"][0]["content"]
    assert system.startswith("You are a meticulous reviewer.")


async def test_validate_json_gives_every_error_with_its_path(serve: ServeClient) -> None:
    bad = {"id": "seven", "status": "lost", "lines": [{"sku": "a", "qty": 0}, {"qty": 2}]}
    good = {"id": 7, "status": "open", "lines": [{"sku": "a", "qty": 1}]}
    async with serve() as client:
        invalid = await client.call_tool("validate_json", {"schema": ORDER, "data": bad})
        valid = await client.call_tool("validate_json", {"schema": ORDER, "data": good})
    assert not invalid.is_error
    assert invalid.structured_content is not None
    assert invalid.structured_content["valid"] is False
    paths = [error["path"] for error in invalid.structured_content["errors"]]
    assert sorted(paths) == ["/id", "/lines/0/qty", "/lines/1", "/status"]
    assert "/lines/1: 'sku' is a required property" in text_of(invalid)
    assert valid.structured_content == {"valid": True, "errors": []}


async def test_json_example_is_valid_against_its_schema(serve: ServeClient) -> None:
    async with serve() as client:
        made = await client.call_tool("json_example", {"schema": ORDER})
        assert made.structured_content is not None
        example = made.structured_content["example"]
        checked = await client.call_tool("validate_json", {"schema": ORDER, "data": example})
    assert example == {"id": 0, "status": "open", "lines": [{"sku": "string", "qty": 0}]}
    assert checked.structured_content is not None
    # the example takes the types, not every bound: qty's minimum is the caller's to fill in
    assert [e["path"] for e in checked.structured_content["errors"]] == ["/lines/0/qty"]


async def test_submit_hands_back_valid_data_and_refuses_invalid(serve: ServeClient) -> None:
    good = {"id": 7, "status": "shipped", "lines": [{"sku": "a", "qty": 3}]}
    async with serve() as client:
        accepted = await client.call_tool("submit", {"schema": ORDER, "data": good})
        refused = await client.call_tool("submit", {"schema": ORDER, "data": {"id": 1}})
    assert accepted.structured_content == {"accepted": True, "data": good}
    assert refused.is_error
    assert "(root): 'status' is a required property" in text_of(refused)
    assert "submit again" in text_of(refused)


async def test_an_invalid_schema_is_an_error_result(serve: ServeClient) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "no-such-type"}}}
    async with serve() as client:
        results = [
            await client.call_tool("validate_json", {"schema": schema, "data": {}}),
            await client.call_tool("submit", {"schema": schema, "data": {}}),
            await client.call_tool("json_example", {"schema": schema}),
        ]
    for result in results:
        assert result.is_error
        assert "the schema is not valid at properties/a/type" in text_of(result)


HOSTILE = {
    "http $ref": ({"$ref": "{url}/s.json"}, {}, "points outside the schema"),
    "relative $ref": ({"$id": "{url}/", "$ref": "s.json"}, {}, "points outside the schema"),
    "file $ref": ({"$ref": "file:///etc/hostname"}, {}, "points outside the schema"),
    "lookahead": ({"pattern": "(?=a)"}, "a", "lookahead (?=...) is not supported"),
    "schema 100 deep": (nested_schema(100), [], "is nested more than 64 levels deep"),
    "value 140 deep": ({}, {"v": "[" * 140 + "]" * 140}, "is nested more than"),
    "reference loop": ({"$ref": "#"}, 1, "references loop"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
async def test_a_hostile_schema_is_a_one_line_error_result(
    serve: ServeClient, remote: tuple[str, list[str]], case: str
) -> None:
    url, hits = remote
    schema, data, says = HOSTILE[case]
    schema = json.loads(json.dumps(schema).replace("{url}", url))
    if isinstance(data, dict) and "v" in data:
        data = json.loads(data["v"])
    async with serve() as client:
        results = [
            await client.call_tool(tool, {"schema": schema, "data": data})
            for tool in ("validate_json", "submit")
        ]
        still = await client.list_tools()
    for result in results:
        assert result.is_error
        assert says in text_of(result)
        assert "\n" not in text_of(result) and SECRET not in text_of(result)
    assert hits == []
    assert "validate_json" in {tool.name for tool in still.tools}


async def test_catastrophic_regexes_answer_at_once(serve: ServeClient) -> None:
    schema = {
        "properties": {"s": {"pattern": "^(a+)+$"}},
        "patternProperties": {"(a|aa)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    data = {"s": "a" * 34 + "!", "a" * 5000 + "!": "x"}
    async with serve() as client:
        started = time.monotonic()
        result = await client.call_tool("validate_json", {"schema": schema, "data": data})
        elapsed = time.monotonic() - started
    assert result.structured_content is not None
    assert result.structured_content["valid"] is False
    assert sorted(e["path"] for e in result.structured_content["errors"]) == ["", "/s"]
    assert elapsed < 5


async def test_the_json_schema_tools_are_declared_read_only(serve: ServeClient) -> None:
    """Codex (and other clients) run a tool marked read-only without asking; the JSON-schema
    tools only compute."""
    async with serve() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("validate_json", "json_example", "submit"):
        notes = tools[name].annotations
        assert notes is not None and notes.read_only_hint is True, name
        assert notes.destructive_hint is False and notes.open_world_hint is False, name
    openheim = tools["openheim"].annotations
    assert openheim is None or not openheim.read_only_hint  # it runs an agent
