"""The JSON-schema tools: ``validate_json`` (every error with its instance path),
``json_example`` (an instance shaped like the schema) and ``submit`` (validate and hand back).

The schema comes with each call, or from ``[mcp_server] schema`` in the user's config when a
call has none. A schema that is not itself a valid JSON schema is an error result that says so;
it is never applied half-understood (a bad configured one stops the server at start).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult, TextContent

from openheim.config.load import Settings
from openheim.formats.schema_check import (
    BadSchema,
    TooCostly,
    error_lines,
    load_schema,
    schema_errors,
)
from openheim.mcp_server.prompt import error_result

MAX_DEPTH = 16
"""How deep ``json_example`` follows nested schemas (a recursive ``$ref`` stops here)."""


NO_SCHEMA = "no schema: pass `schema`, or set [mcp_server] schema in the server's config.toml"


def configured_schema(settings: Settings) -> dict[str, Any] | None:
    """The schema file of ``[mcp_server] schema`` (relative to the config's folder), checked;
    None when none is set. A file that cannot be read, is not JSON or is not a valid schema is a
    ``ConfigError``."""
    raw = settings.mcp_server.schema
    if raw is None:
        return None
    return load_schema(settings.home / Path(raw).expanduser(), "[mcp_server] schema")


def validate_result(schema: dict[str, Any] | None, data: Any) -> CallToolResult:
    """``validate_json``: whether ``data`` is valid, and every error with its path."""
    if schema is None:
        return error_result(NO_SCHEMA)
    try:
        errors = schema_errors(schema, data)
    except (BadSchema, TooCostly) as err:
        return error_result(str(err))
    text = "valid" if not errors else f"{len(errors)} error(s):\n" + error_lines(errors)
    return _both(text, {"valid": not errors, "errors": errors})


def submit_result(schema: dict[str, Any] | None, data: Any) -> CallToolResult:
    """``submit``: ``data`` handed back when valid; otherwise an error listing every error,
    so the caller can fix them and submit again."""
    if schema is None:
        return error_result(NO_SCHEMA)
    try:
        errors = schema_errors(schema, data)
    except (BadSchema, TooCostly) as err:
        return error_result(str(err))
    if errors:
        return error_result(f"not accepted, fix these and submit again:\n{error_lines(errors)}")
    return _both(json.dumps(data), {"accepted": True, "data": data})


def example_result(schema: dict[str, Any] | None) -> CallToolResult:
    """``json_example``: an instance shaped like ``schema``."""
    if schema is None:
        return error_result(NO_SCHEMA)
    try:
        schema_errors(schema, None)
    except (BadSchema, TooCostly) as err:
        return error_result(str(err))
    example = example_of(schema, schema, 0)
    return _both(json.dumps(example, indent=2), {"example": example})


def example_of(schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    """An instance of ``schema``: its own example, default, const or first enum value where it
    has one, else one built from its type (an object gets every property)."""
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("enum"):
        return schema["enum"][0]
    if isinstance(ref := schema.get("$ref"), str):
        return example_of(_resolve(ref, root), root, depth + 1)
    for key in ("oneOf", "anyOf", "allOf"):
        if schema.get(key):
            return example_of(schema[key][0], root, depth + 1)
    return _by_type(schema, root, depth)


def _by_type(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    kind = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: example_of(sub, root, depth + 1) for name, sub in props.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        return [example_of(schema.get("items", {}), root, depth + 1)] * min(count, 3)
    simple: dict[str, Any] = {"string": "string", "integer": 0, "number": 0, "boolean": False}
    return simple.get(str(kind))


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    """A local ``#/...`` reference inside ``root`` (None for any other)."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _both(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )
