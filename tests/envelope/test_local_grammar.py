"""The envelope schema drives llama.cpp's constrained decoding, and what it yields parses."""

from __future__ import annotations

from openheim.envelope import envelope_schema
from openheim.envelope.parse import DELEGATE_TOOL, SKILL_TOOL
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ToolChoice, ToolSpec
from openheim.providers.llama_grammars import envelope_grammar

READ = ToolSpec(
    "read_file",
    "Read a text file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "root": {"type": "object"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


def request(tools: list[ToolSpec], choice: ToolChoice) -> ModelRequest:
    schema = envelope_schema(tools, choice)
    return ModelRequest("m", (Message.user("x"),), tool_choice=choice, envelope_schema=schema)


def test_every_schema_shape_compiles_to_a_grammar() -> None:
    ref = ToolSpec("mcp__x", "X.", {"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {}})
    skill = ToolSpec(SKILL_TOOL, "Load a skill.", {"type": "object"})
    delegate = ToolSpec(DELEGATE_TOOL, "Delegate.", {"type": "object"})
    for choice in ("auto", "required"):
        assert envelope_grammar(request([READ, ref, skill, delegate], choice)) is not None


def test_no_schema_means_no_grammar() -> None:
    assert envelope_grammar(ModelRequest("m", (Message.user("x"),))) is None
