"""Checking JSON values against a JSON schema: every error with its JSON-pointer instance path.

Shared by the structured output of a prompt (``runtime.structured``) and the JSON-schema tools
of ``openheim mcp serve``. A schema that is not itself a valid JSON schema raises ``BadSchema``;
it is never applied half-understood.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import validators  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

from openheim.errors import ConfigError


class BadSchema(ValueError):
    """The schema is not a valid JSON schema; the message says where."""


def check_schema(schema: Any) -> None:
    """Raise ``BadSchema`` unless ``schema`` is a valid JSON schema (an object or a boolean)."""
    if not isinstance(schema, Mapping | bool):
        raise BadSchema(f"the schema must be a JSON object, not {type(schema).__name__}")
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        where = "/".join(str(p) for p in err.path) or "its root"
        raise BadSchema(f"the schema is not valid at {where}: {err.message}") from None


def load_schema(path: Path, name: str) -> dict[str, Any]:
    """The JSON schema in the file ``path`` (``name`` says which setting named it); a file that
    cannot be read, is not JSON, is not an object or is not a valid schema is a ``ConfigError``
    naming it."""
    where = f"{name} {path}"
    fix = "fix the file, or point at another"
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{where} cannot be read: {err.strerror}", hint=fix) from None
    except ValueError as err:
        raise ConfigError(f"{where} is not JSON: {err}", hint=fix) from None
    if not isinstance(schema, dict):
        raise ConfigError(f"{where} is not a JSON object", hint=fix)
    try:
        check_schema(schema)
    except BadSchema as err:
        raise ConfigError(f"{where}: {err}", hint=fix) from None
    return schema


def schema_errors(schema: Mapping[str, Any], data: Any) -> list[dict[str, str]]:
    """Every error of ``data`` against ``schema``, each with its JSON-pointer instance path,
    in document order."""
    check_schema(schema)
    found = validators.validator_for(schema)(schema).iter_errors(data)
    ordered = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
    return [{"path": _pointer(e.absolute_path), "message": e.message} for e in ordered]


def error_lines(errors: list[dict[str, str]]) -> str:
    """The errors one a line, ``PATH: MESSAGE`` (``(root)`` for the whole value)."""
    return "\n".join(f"{e['path'] or '(root)'}: {e['message']}" for e in errors)


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else ""
