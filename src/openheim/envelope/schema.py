"""The JSON schema of the action envelope, for providers that can constrain decoding.

One schema per request: ``actions`` is a non-empty array whose items match ``anyOf`` one action
schema per tool (its name as a one-value enum, its own arguments schema), plus the ``skill`` and
``subagent`` shorthands when ``load_skill`` / ``delegate_task`` are among the tools. A named
``tool_choice`` leaves only that tool. A tool schema that uses ``$ref`` is loosened to "any
object" here, since its references would not resolve inside the envelope; the tool still checks
its arguments when it runs.

For a small model (``required_only``) each tool's arguments are only those it requires: a tiny
model fills optional ones with noise (SmolLM2-135M gave ``read_file`` an offset of 2346 into a
one-line file, and ``list_dir`` a made-up absolute path), and the tools' defaults (the whole
file, the work dir) are what such a model means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openheim.envelope.parse import DELEGATE_TOOL, SKILL_TOOL
from openheim.errors import ConfigError
from openheim.providers.base import NamedTool, ToolChoice, ToolSpec


def envelope_schema(
    tools: Sequence[ToolSpec], choice: ToolChoice = "auto", *, required_only: bool = False
) -> dict[str, Any]:
    """The schema of one envelope offering ``tools`` under ``choice`` (``required_only``: only
    the arguments each tool requires, for a small model)."""
    return {
        "type": "object",
        "properties": {
            "assistant_text": {"type": "string"},
            "actions": {
                "type": "array",
                "items": {"anyOf": action_schemas(tools, choice, required_only=required_only)},
                "minItems": 1,
            },
        },
        "required": ["actions"],
        "additionalProperties": False,
    }


def offered_tools(tools: Sequence[ToolSpec], choice: ToolChoice) -> tuple[ToolSpec, ...]:
    """The tools the model may call under ``choice``: all of them, or only the named one."""
    if not isinstance(choice, NamedTool):
        return tuple(tools)
    named = tuple(t for t in tools if t.name == choice.name)
    if not named:
        raise ConfigError(
            f"tool_choice names the tool {choice.name!r}, which the request does not offer",
            hint=f"name one of: {', '.join(t.name for t in tools) or 'no tools are offered'}",
        )
    return named


def action_schemas(
    tools: Sequence[ToolSpec], choice: ToolChoice, *, required_only: bool = False
) -> list[dict[str, Any]]:
    """One schema per allowed action: the tools, then the shorthands their tools enable."""
    offered = offered_tools(tools, choice)
    schemas = [
        _action(
            "tool",
            name={"enum": [t.name]},
            arguments=_arguments_schema(t.parameters, required_only=required_only),
        )
        for t in offered
    ]
    if isinstance(choice, NamedTool):
        return schemas
    names = {t.name for t in offered}
    if SKILL_TOOL in names:
        schemas.append(_action("skill", name={"type": "string"}))
    if DELEGATE_TOOL in names:
        schemas.append(_action("subagent", name={"type": "string"}, task={"type": "string"}))
    return schemas


def _action(kind: str, **fields: dict[str, Any]) -> dict[str, Any]:
    """An action object: its ``type`` constant, an ``id`` and ``fields``, all required."""
    return {
        "type": "object",
        "properties": {"type": {"enum": [kind]}, "id": {"type": "string"}, **fields},
        "required": ["type", "id", *fields],
        "additionalProperties": False,
    }


def _arguments_schema(parameters: Mapping[str, Any], *, required_only: bool) -> dict[str, Any]:
    if _has_ref(parameters):
        return {"type": "object"}
    if not required_only:
        return dict(parameters)
    required = list(parameters.get("required") or ())
    properties = parameters.get("properties") or {}
    kept = {name: properties[name] for name in required if name in properties}
    return {**parameters, "properties": kept, "additionalProperties": False}


def _has_ref(node: object) -> bool:
    if isinstance(node, Mapping):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False
