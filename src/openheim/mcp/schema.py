"""Caps on input schemas from MCP servers: an untrusted server must not flood the model's context.

A schema is passed through as given unless it is too deep or too large; then the over-deep
parts are replaced by ``{}`` (any value) and, if still too large, only the top-level property
names are kept. The root is always an object schema, which providers require.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 12
MAX_BYTES = 32 * 1024
_ANY: dict[str, Any] = {}


def cap_schema(
    schema: Any, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES
) -> dict[str, Any]:
    """``schema`` limited to ``max_depth`` nesting levels and ``max_bytes`` of JSON."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return {"type": "object", "properties": {}}
    capped: dict[str, Any] = _prune(schema, max_depth)
    if _size(capped) <= max_bytes:
        return capped
    names = list(capped.get("properties") or {})
    flat: dict[str, Any] = {"type": "object", "properties": {n: {} for n in names}}
    if _size(flat) > max_bytes:
        return {"type": "object"}
    return flat


def _prune(value: Any, depth: int) -> Any:
    """``value`` with every container below ``depth`` levels replaced by an empty schema."""
    if isinstance(value, dict):
        if depth <= 0:
            return dict(_ANY)
        return {str(k): _prune(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return []
        return [_prune(v, depth - 1) for v in value]
    return value


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())
