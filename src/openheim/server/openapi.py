"""The OpenAPI 3.1 document of the REST routes, served at ``/api/openapi.json``.

Written out by hand next to the routes (``rest.py``), and checked against them by a test that
fuzzes every route from this document: every answer must match its schema here.
"""

from __future__ import annotations

from typing import Any

from openheim._version import __version__

JSON = "application/json"


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else list(props),
    }


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


STR, INT, NUM, BOOL = ({"type": t} for t in ("string", "integer", "number", "boolean"))
ERROR = _obj({"error": STR, "hint": STR})
USAGE = {"type": "object", "additionalProperties": {"type": "integer"}}
SESSION = _obj(
    {
        "id": STR, "title": STR, "cwd": STR, "provider": STR, "model": STR,
        "skills": _list(STR), "created_at": NUM, "updated_at": NUM, "usage": USAGE,
        "cost": _nullable("number"), "message_count": INT,
    }
)  # fmt: skip
LISTED = _obj({**SESSION["properties"], "busy": BOOL})
"""A session as the list shows it: ``busy`` while a turn runs in it."""
CONFIG = _obj(
    {
        "version": STR, "provider": _nullable("string"), "model": _nullable("string"),
        "work_dir": STR, "approval": STR, "allow_shell": BOOL, "max_iterations": INT,
        "save_sessions": BOOL, "file_changes": STR, "default_skills": _list(STR),
    }
)  # fmt: skip
PROVIDER = _obj(
    {
        "provider": STR, "kind": STR, "default_model": _nullable("string"),
        "models": _list(STR), "default": BOOL,
    }
)  # fmt: skip
SKILL = _obj({"name": STR, "description": STR, "trusted": BOOL})
TOOL = _obj({"name": STR, "description": STR, "read_only": BOOL, "kind": STR, "parameters": {}})
MCP = _obj(
    {"name": STR, "transport": STR, "connected": BOOL, "tools": INT, "error": _nullable("string")}
)
ID_PARAM = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {**STR, "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"},
    "description": "a session id: 36 characters, lower case",
}


def _answer(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _get(summary: str, schema: dict[str, Any], **errors: str) -> dict[str, Any]:
    responses = {
        "200": _answer(schema),
        "400": _answer(ERROR, "an unknown query parameter"),
        "401": _answer(ERROR, "missing or wrong token"),
    }
    responses |= {code.strip("_"): _answer(ERROR, why) for code, why in errors.items()}
    return {"summary": summary, "responses": responses}


def _session_op(summary: str, schema: dict[str, Any]) -> dict[str, Any]:
    op = _get(summary, schema, _400="a malformed id", _404="no such session")
    op["parameters"] = [ID_PARAM]
    return op


def _sessions() -> dict[str, Any]:
    op = _get(
        "stored sessions, newest first",
        _obj({"sessions": _list(LISTED), "next": _nullable("number")}),
        _400="a bad limit or cursor",
    )
    op["parameters"] = [
        {"name": "limit", "in": "query", "schema": {**INT, "minimum": 1, "maximum": 200}},
        {"name": "before", "in": "query", "schema": NUM, "description": "the `next` of a page"},
        {"name": "q", "in": "query", "schema": STR, "description": "full-text search"},
    ]  # fmt: skip
    return op


def _export() -> dict[str, Any]:
    op = _session_op("a session as Markdown or JSON", {})
    op["parameters"] = [
        ID_PARAM,
        {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["md", "json"]}},
    ]
    op["responses"]["200"] = {
        "description": "the export",
        "content": {"text/markdown": {"schema": STR}, JSON: {"schema": {"type": "object"}}},
    }
    return op


def _paths() -> dict[str, Any]:
    live = {"oneOf": [{"type": "null"}, _obj({"seq": INT, "busy": BOOL})]}
    messages = _list({"type": "object"})
    one = _obj({"session": SESSION, "messages": messages, "live": live, "seq": INT})
    delete = _session_op("delete a stored session", _obj({"deleted": STR}))
    delete["responses"]["409"] = _answer(ERROR, "a prompt elsewhere holds the session")
    health = _obj({"status": STR, "version": STR, "uptime": NUM})
    return {
        "/health": {"get": _get("liveness", health)},
        "/api/config": {"get": _get("public settings (never a key)", CONFIG)},
        "/api/models": {"get": _get("providers and models", _obj({"providers": _list(PROVIDER)}))},
        "/api/skills": {"get": _get("skills", _obj({"skills": _list(SKILL)}))},
        "/api/tools": {"get": _get("tools a new session offers", _obj({"tools": _list(TOOL)}))},
        "/api/mcp-servers": {"get": _get("MCP servers", _obj({"servers": _list(MCP)}))},
        "/api/sessions": {"get": _sessions()},
        "/api/sessions/{session_id}": {
            "get": _session_op("a session and its messages", one),
            "delete": delete,
        },
        "/api/sessions/{session_id}/export": {"get": _export()},
    }


def openapi_document() -> dict[str, Any]:
    """The document (a new dict each call)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "openheim server", "version": __version__},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": _paths(),
    }
