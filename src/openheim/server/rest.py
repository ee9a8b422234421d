"""The REST routes: public settings, models, skills, tools, MCP servers and stored sessions.

Every answer is JSON (an export in Markdown is ``text/markdown``); every error is
``{"error": ..., "hint": ...}`` with a 4xx status. The routes only read the runtime's settings
and the session store; ``openapi.py`` describes them.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from openheim._version import __version__
from openheim.config.providers import infer_kind, offered_models, provider_entries
from openheim.errors import OpenheimError, SessionNotFound
from openheim.messages import Message
from openheim.runtime import stored_checkpoints
from openheim.server.context import ServerContext
from openheim.server.turns import before_turn
from openheim.store.base import SessionRecord

SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_PAGE = 200
DEFAULT_PAGE = 50


def error(status: int, message: str, hint: str) -> JSONResponse:
    return JSONResponse({"error": message, "hint": hint}, status_code=status)


def ctx(request: Request) -> ServerContext:
    context: ServerContext = request.app.state.openheim
    return context


async def health(request: Request) -> Response:
    context = ctx(request)
    return JSONResponse(
        {"status": "ok", "version": __version__, "uptime": time.time() - context.started}
    )


async def config(request: Request) -> Response:
    """Public settings only: an allow-list of keys, never a key or a provider's address."""
    settings = ctx(request).settings
    return JSONResponse(
        {
            "version": __version__,
            "provider": settings.provider,
            "model": settings.model,
            "work_dir": str(settings.work_dir),
            "approval": settings.approval,
            "allow_shell": settings.allow_shell,
            "max_iterations": settings.max_iterations,
            "save_sessions": settings.save_sessions,
            "file_changes": settings.file_changes,
            "default_skills": list(settings.default_skills),
        }
    )


async def models(request: Request) -> Response:
    settings = ctx(request).settings
    rows = []
    for name, entry in provider_entries(settings).items():
        rows.append(
            {
                "provider": name,
                "kind": infer_kind(name, entry),
                "default_model": entry.default_model,
                "models": offered_models(entry),
                "default": name == settings.provider,
            }
        )
    return JSONResponse({"providers": rows})


async def skills(request: Request) -> Response:
    found = ctx(request).skills().available()
    return JSONResponse(
        {
            "skills": [
                {"name": s.name, "description": s.description, "trusted": s.trusted} for s in found
            ]
        }
    )


async def tools(request: Request) -> Response:
    rows = [
        {
            "name": tool.name,
            "description": tool.description,
            "read_only": tool.capabilities.read_only,
            "kind": str(tool.capabilities.kind.value),
            "parameters": tool.parameters,
        }
        for tool in ctx(request).tools()
    ]
    return JSONResponse({"tools": rows})


async def mcp_servers(request: Request) -> Response:
    rows = await ctx(request).mcp_status()
    return JSONResponse({"servers": rows})


async def list_sessions(request: Request) -> Response:
    query = request.query_params
    limit = _int(query.get("limit"), DEFAULT_PAGE)
    if limit is None or not 1 <= limit <= MAX_PAGE:
        return error(400, "limit must be a whole number from 1 to 200", "e.g. ?limit=50")
    before = _float(query.get("before"))
    if "before" in query and before is None:
        return error(400, "before must be a number", "pass the last session's updated_at")
    context = ctx(request)
    store = context.store
    text = query.get("q", "").strip()
    if text:
        hits = store.search(text, limit=limit)
        records = _unique([store.get(hit.session_id) for hit in hits])
        return JSONResponse({"sessions": _rows(context, records), "next": None})
    records = store.list(limit=limit, before=before)
    following = records[-1].updated_at if len(records) == limit else None
    return JSONResponse({"sessions": _rows(context, records), "next": following})


def _rows(context: ServerContext, records: list[SessionRecord]) -> list[dict[str, Any]]:
    """The listed sessions, each with ``busy``: whether a turn runs in it now."""
    return [{**_record(r), "busy": _busy(context, r.id)} for r in records]


def _busy(context: ServerContext, key: str) -> bool:
    """Whether a turn runs in the session here, or (replicas) on another replica."""
    live = context.hub.get(key)
    if live is not None and live.busy:
        return True
    return context.hub.relay is not None and context.store.held_elsewhere(key)


async def get_session(request: Request) -> Response:
    found = _find(request)
    if isinstance(found, Response):
        return found
    context = ctx(request)
    messages = context.store.messages(found.id)
    live = context.hub.get(found.id)
    state = None if live is None else {"seq": live.seq, "busy": _busy(context, found.id)}
    seq = live.seq if live is not None else context.store.frames.last(found.id)
    if live is not None and live.busy and live.turn is not None:  # the turn comes as frames
        messages, seq = before_turn(messages, live.turn), live.turn.seq
    body = {
        "session": _record(found),
        "messages": [_message(m) for m in messages],
        "live": state,
        "seq": seq,
    }
    return JSONResponse(body)


async def delete_session(request: Request) -> Response:
    found = _find(request)
    if isinstance(found, Response):
        return found
    context = ctx(request)
    try:
        await context.hub.delete(found.id)
    except OpenheimError as err:
        return error(409, err.message, err.hint or "try again once its prompt has ended")
    saved = stored_checkpoints.checkpoints_for(context.settings.data_dir, context.store)
    await asyncio.to_thread(saved.drop, found.id)
    return JSONResponse({"deleted": found.id})


async def export_session(request: Request) -> Response:
    found = _find(request)
    if isinstance(found, Response):
        return found
    fmt = request.query_params.get("format", "md")
    from openheim.store.export import export_json, export_markdown

    store = ctx(request).store
    if fmt == "json":
        return Response(export_json(store, found.id), media_type="application/json")
    if fmt == "md":
        return PlainTextResponse(export_markdown(store, found.id), media_type="text/markdown")
    return error(400, f"unknown export format {fmt!r}", "use format=md or format=json")


async def one_session(request: Request) -> Response:
    """One route for both methods, so that 405 answers list both in ``Allow``."""
    if request.method == "DELETE":
        return await delete_session(request)
    return await get_session(request)


def _find(request: Request) -> SessionRecord | Response:
    raw = request.path_params["session_id"]
    if not SESSION_ID.fullmatch(raw):
        return error(400, f"{raw!r} is not a session id", "give the 36-character id in lower case")
    try:
        return ctx(request).store.get(raw)
    except SessionNotFound:
        return error(404, f"no session {raw}", "list sessions with GET /api/sessions")


def _unique(records: list[SessionRecord]) -> list[SessionRecord]:
    seen: dict[str, SessionRecord] = {}
    for record in records:
        seen.setdefault(record.id, record)
    return list(seen.values())


def _record(record: SessionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "cwd": record.cwd,
        "provider": record.provider,
        "model": record.model,
        "skills": list(record.skills),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "usage": record.usage.to_dict(),
        "cost": record.cost,
        "message_count": record.message_count,
    }


def _message(message: Message) -> dict[str, Any]:
    return message.to_dict()


def _int(raw: str | None, default: int) -> int | None:
    if raw is None:
        return default
    return int(raw) if raw.isdigit() and len(raw) < 10 else None


def _float(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


Endpoint = Callable[[Request], Awaitable[Response]]


def _only(endpoint: Endpoint, *names: str) -> Endpoint:
    """``endpoint`` refusing query parameters other than ``names``, and any given twice (400),
    so a misspelt or repeated one is an error rather than silently ignored or half read."""

    async def checked(request: Request) -> Response:
        query = request.query_params
        unknown = sorted(set(query) - set(names))
        if unknown:
            allowed = ", ".join(names) or "none"
            return error(400, f"unknown query parameter {unknown[0]!r}", f"allowed: {allowed}")
        repeated = sorted(name for name in set(query) if len(query.getlist(name)) > 1)
        if repeated:
            return error(
                400, f"query parameter {repeated[0]!r} is given more than once", "give it once"
            )
        return await endpoint(request)

    return checked


ROUTES = [
    Route("/health", _only(health)),
    Route("/api/config", _only(config)),
    Route("/api/models", _only(models)),
    Route("/api/skills", _only(skills)),
    Route("/api/tools", _only(tools)),
    Route("/api/mcp-servers", _only(mcp_servers)),
    Route("/api/sessions", _only(list_sessions, "limit", "before", "q")),
    Route("/api/sessions/{session_id}", _only(one_session), methods=["GET", "DELETE"]),
    Route("/api/sessions/{session_id}/export", _only(export_session, "format")),
]
