"""The Starlette application of ``openheim serve``: the page, the login, REST, ``/ws``, and
``/acp`` where the context carries an ACP bridge (``ServerContext.acp``).

``GET /healthz`` answers ``ok`` to anyone, for a load balancer's health checks.
``create_app(context, policy)`` builds it; the ``Guard`` middleware (token, origins, sizes)
wraps everything. Closing the app (its lifespan's end) closes the open sessions and gives the
store back to the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket

from openheim.errors import OpenheimError
from openheim.redaction.secrets import redact
from openheim.server.acp_prompts import HubPrompts
from openheim.server.context import ServerContext
from openheim.server.guard import Guard, Policy
from openheim.server.openapi import openapi_document
from openheim.server.pages import STATIC, login_page
from openheim.server.rest import ROUTES
from openheim.server.ws import accept, ws_endpoint
from openheim.serving.auth import COOKIE

LOGIN_FORM_BYTES = 4096
NO_STORE = {"cache-control": "no-store"}


async def acp_endpoint(websocket: WebSocket) -> None:
    """``/acp``: the token checked as on ``/ws``, then the context's ACP bridge."""
    context: ServerContext = websocket.app.state.openheim
    await accept(websocket)
    if context.acp is not None:
        prompts = HubPrompts(context.hub)
        await context.acp(websocket, context.runtime, context.max_frame_bytes, prompts)


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=NO_STORE)


async def healthz(request: Request) -> Response:
    """The health check of a load balancer in front of several replicas: reachable without the
    token (a health check carries none), so it says ``ok`` and nothing else."""
    return PlainTextResponse("ok\n", headers=NO_STORE)


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


def _logged_in(request: Request) -> Response:
    context: ServerContext = request.app.state.openheim
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        context.auth.cookie_value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def _login_page(message: str, status: int) -> Response:
    return HTMLResponse(login_page(message), status_code=status, headers=NO_STORE)


async def login(request: Request) -> Response:
    """The one-time link (``?code=``) or the token pasted in the form sets the cookie."""
    context: ServerContext = request.app.state.openheim
    if request.method == "POST":
        body = await request.body()
        token = parse_qs(body[:LOGIN_FORM_BYTES].decode("utf-8", "replace")).get("token", [""])[0]
        if context.auth.check_token(token.strip()):
            return _logged_in(request)
        return _login_page("That is not the server's token.", 401)
    code = request.query_params.get("code")
    if code is not None:
        if await asyncio.to_thread(context.auth.use_login_code, code):  # may ask the database
            return _logged_in(request)
        return _login_page("This login link was used already: paste the token instead.", 401)
    return _login_page("", 200)


async def openheim_error(request: Request, exc: Exception) -> Response:
    """An openheim error in a route: one line and a hint, 400 for bad input, else 503."""
    assert isinstance(exc, OpenheimError)
    status = 400 if exc.usage_error else 503
    body = {"error": redact(exc.message), "hint": redact(exc.hint or "")}
    return JSONResponse(body, status_code=status)


def create_app(context: ServerContext, policy: Policy) -> Starlette:
    """The server's ASGI app over ``context``, guarded by ``policy``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        collector = context.collector
        pacing = None
        if collector is not None:
            pacing = asyncio.create_task(collector.run(context.hub.busy))
        context.hub.start()
        try:
            yield
        finally:
            if pacing is not None:
                pacing.cancel()
                await asyncio.gather(pacing, return_exceptions=True)
            await context.hub.close_all()
            context.runtime.shared.give_back(context.store)

    routes = [
        Route("/", index),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/healthz", healthz),
        Route("/api/openapi.json", openapi),
        *ROUTES,
        WebSocketRoute("/ws", ws_endpoint),
        *([WebSocketRoute("/acp", acp_endpoint)] if context.acp is not None else []),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Guard, policy=policy)], lifespan=lifespan)
    app.state.openheim = context
    return app
