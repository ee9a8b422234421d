"""The request side: schema, instructions, history as text, and the protocol choice."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openheim.envelope import envelope_request, envelope_schema, parse_reply, protocol_for
from openheim.envelope.parse import DELEGATE_TOOL, ENVELOPE_ERROR, SKILL_TOOL
from openheim.envelope.prompt import protocol_section, render_history
from openheim.errors import ConfigError
from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.providers.base import ModelRequest, NamedTool, ToolSpec

READ = ToolSpec(
    "read_file",
    "Read a text file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
WRITE = ToolSpec("write_file", "Write a file.", {"type": "object", "properties": {}})
SKILL = ToolSpec(SKILL_TOOL, "Load a skill.", {"type": "object"})
DELEGATE = ToolSpec(DELEGATE_TOOL, "Delegate a task.", {"type": "object"})


def action_kinds(schema: dict[str, Any]) -> list[tuple[str, str | None]]:
    items = schema["properties"]["actions"]["items"]["anyOf"]
    out = []
    for action in items:
        props = action["properties"]
        name = props["name"].get("enum", [None])[0]
        out.append((props["type"]["enum"][0], name))
    return out


def test_schema_has_one_action_per_tool_and_the_shorthands() -> None:
    schema = envelope_schema([READ, WRITE, SKILL, DELEGATE])
    assert schema["required"] == ["actions"]
    assert schema["properties"]["actions"]["minItems"] == 1
    assert action_kinds(schema) == [
        ("tool", "read_file"),
        ("tool", "write_file"),
        ("tool", SKILL_TOOL),
        ("tool", DELEGATE_TOOL),
        ("skill", None),
        ("subagent", None),
    ]
    read_action = schema["properties"]["actions"]["items"]["anyOf"][0]
    assert read_action["properties"]["arguments"] == READ.parameters
    assert read_action["required"] == ["type", "id", "name", "arguments"]


def test_schema_for_a_named_tool_offers_only_it() -> None:
    schema = envelope_schema([READ, WRITE, SKILL], NamedTool("write_file"))
    assert action_kinds(schema) == [("tool", "write_file")]
    with pytest.raises(ConfigError, match="'nope'"):
        envelope_schema([READ], NamedTool("nope"))


def test_schema_loosens_argument_schemas_with_refs() -> None:
    params = {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {}}}
    schema = envelope_schema([ToolSpec("mcp__x", "X.", params)])
    action = schema["properties"]["actions"]["items"]["anyOf"][0]
    assert action["properties"]["arguments"] == {"type": "object"}


def test_instructions_list_tools_and_the_rules_of_the_choice() -> None:
    text = protocol_section([READ, SKILL], "required")
    assert "```openheim-agent" in text
    assert '- read_file: Read a text file.\n  arguments: {"type":"object",' in text
    assert '"type": "skill"' in text
    assert '"type": "subagent"' not in text
    assert "must contain the block, with at least one action" in text
    named = protocol_section([READ, WRITE], NamedTool("read_file"))
    assert "may only call the tool read_file" in named
    assert "write_file" not in named


def test_history_renders_calls_as_blocks_and_results_as_text() -> None:
    calls = (
        ToolUseBlock("t1", "read_file", {"path": "a"}),
        ToolUseBlock("t2", "nope", {}, raw_arguments="[1]", error="bad"),
        ToolUseBlock("s1", SKILL_TOOL, {"name": "pdf"}),
    )
    history = [
        Message.user("hi", ImageBlock("AAAA", "image/png")),
        Message("assistant", (ThinkingBlock("hmm", "sig"), TextBlock("Looking."), *calls)),
        Message(
            "user",
            (
                ToolResultBlock("t1", "contents"),
                ToolResultBlock("t2", "bad", is_error=True),
                ToolResultBlock("s1", "skill text"),
                TextBlock("guidance"),
            ),
        ),
    ]
    first, assistant, results = render_history(history)
    assert first is history[0]
    assert assistant.content[:2] == (ThinkingBlock("hmm", "sig"), TextBlock("Looking."))
    fenced = assistant.content[2]
    assert isinstance(fenced, TextBlock)
    assert fenced.text.startswith("\n```openheim-agent\n")
    reparsed = parse_reply(fenced.text, ["read_file", SKILL_TOOL])
    assert [(c.id, c.name, dict(c.arguments), c.raw_arguments) for c in reparsed.calls] == [
        ("t1", "read_file", {"path": "a"}, None),
        ("t2", "nope", {}, "[1]"),
        ("s1", SKILL_TOOL, {"name": "pdf"}, None),
    ]
    assert results.content == (
        TextBlock(
            "Result of action t1 (read_file):\ncontents\n\n"
            "Result of action t2 (nope) [error]:\nbad\n\n"
            f"Result of action s1 ({SKILL_TOOL}):\nskill text"
        ),
        TextBlock("guidance"),
    )


def test_history_replays_an_unreadable_block_verbatim() -> None:
    bad = "```openheim-agent\n{oops\n```"
    (call,) = parse_reply(bad, ["read_file"]).calls
    assert call.name == ENVELOPE_ERROR
    (rendered,) = render_history([Message("assistant", (call,))])
    assert rendered.content == (TextBlock(bad),)


def test_envelope_request_moves_tools_into_the_prompt() -> None:
    request = ModelRequest("m", (Message.user("hi"),), system="Be brief.", tools=(READ,))
    inner = envelope_request(request)
    assert inner.tools == ()
    assert inner.tool_choice == "auto"
    assert inner.system is not None
    assert inner.system.startswith("Be brief.\n\n# Actions")
    assert inner.envelope_schema == envelope_schema([READ])
    required = envelope_request(ModelRequest("m", (), tools=(READ,), tool_choice="required"))
    assert required.tool_choice == "required"
    assert required.system is not None
    assert "at least one action" in required.system


def test_no_tools_means_no_protocol() -> None:
    history = (Message("assistant", (ToolUseBlock("t1", "read_file", {}),)),)
    for request in (
        ModelRequest("m", history, system="S"),
        ModelRequest("m", history, system="S", tools=(READ,), tool_choice="none"),
    ):
        inner = envelope_request(request)
        assert (inner.system, inner.tools, inner.tool_choice) == ("S", (), "none")
        assert inner.envelope_schema is None
        assert "```openheim-agent" in inner.messages[0].text


@pytest.mark.parametrize(
    ("kind", "configured", "expected"),
    [
        ("llama_cpp", None, "envelope"),
        ("llama_server", None, "envelope"),
        ("openai", None, "native"),
        ("llama_cpp", "native", "native"),
        ("openai_compatible", "envelope", "envelope"),
    ],
)
def test_protocol_for(kind: str, configured: str | None, expected: str) -> None:
    assert protocol_for(kind, configured) == expected


def test_protocol_for_rejects_unknown_values() -> None:
    with pytest.raises(ConfigError, match="'xml'"):
        protocol_for("openai", "xml")


def test_schema_is_json() -> None:
    schema = envelope_schema([READ, SKILL, DELEGATE], "required")
    assert json.loads(json.dumps(schema)) == schema


def test_a_small_model_is_offered_only_the_arguments_a_tool_requires() -> None:
    properties = {"path": {"type": "string"}, "offset": {"type": "integer"}}
    spec = ToolSpec(
        "read_file", "Read.", {"type": "object", "properties": properties, "required": ["path"]}
    )
    [small] = envelope_schema([spec], required_only=True)["properties"]["actions"]["items"]["anyOf"]
    assert small["properties"]["arguments"]["properties"] == {"path": {"type": "string"}}
    assert small["properties"]["arguments"]["additionalProperties"] is False
    [full] = envelope_schema([spec])["properties"]["actions"]["items"]["anyOf"]
    assert full["properties"]["arguments"] == dict(spec.parameters)
