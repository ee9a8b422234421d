"""The guard through a real uvicorn: the login link and cookie, the WebSocket token
subprotocol, the origin allow-list, CORS and the body limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from openheim.serving.auth import COOKIE
from openheim.testing import FakeLLMServer
from tests.server.support import TOKEN, served

ALLOWED = "https://ide.example.com"


async def test_the_login_link_sets_a_cookie_once(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(None) as http:
            code = server.context.auth.login_code
            first = await http.get(f"/login?code={code}")
            assert first.status_code == 303 and first.headers["location"] == "/"
            cookie = first.cookies[COOKIE]
            assert TOKEN not in cookie
            assert "httponly" in first.headers["set-cookie"].lower()
            assert "samesite=strict" in first.headers["set-cookie"].lower()
            async with server.client(None) as fresh:
                page = await fresh.get("/", headers={"Cookie": f"{COOKIE}={cookie}"})
            assert page.status_code == 200
            again = await http.get(f"/login?code={code}")
            assert again.status_code == 401 and COOKIE not in again.cookies


async def test_the_login_form_takes_the_token(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(None) as http:
            wrong = await http.post("/login", data={"token": "nope"})
            assert wrong.status_code == 401 and COOKIE not in wrong.cookies
            right = await http.post("/login", data={"token": TOKEN})
            assert right.status_code == 303 and COOKIE in right.cookies
            async with server.client(None) as fresh:
                forged = await fresh.get("/api/config", headers={"Cookie": f"{COOKIE}={'0' * 64}"})
            assert forged.status_code == 401


async def test_websocket_token_by_header_subprotocol_or_cookie(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            async with server.socket() as ws:
                assert (await ws.call("system", type="ping"))["type"] == "pong"
            protocols = ["openheim.v1", f"openheim.token.{TOKEN}"]
            async with server.socket(None, subprotocols=protocols) as ws:
                assert ws.conn is not None and ws.conn.subprotocol == "openheim.v1"
            cookie = {"Cookie": f"{COOKIE}={server.context.auth.cookie_value}"}
            async with server.socket(None, cookie) as ws:
                assert (await ws.call("system", type="ping"))["type"] == "pong"
            for offered in (None, ["openheim.v1", "openheim.token.wrong-token-123456"]):
                with pytest.raises(InvalidStatus):
                    async with server.socket(None, subprotocols=offered):
                        pass
            with pytest.raises(InvalidStatus):
                async with server.socket("wrong-token-0123456789"):
                    pass


async def test_origins_are_an_allow_list(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, origins=(ALLOWED,)) as server, server.client() as http:
            evil = await http.get("/api/config", headers={"Origin": "https://evil.example"})
            assert evil.status_code == 403
            ok = await http.get("/api/config", headers={"Origin": ALLOWED})
            assert ok.status_code == 200
            assert ok.headers["access-control-allow-origin"] == ALLOWED
            own = await http.get("/api/config", headers={"Origin": server.url})
            assert own.status_code == 200 and "access-control-allow-origin" not in own.headers
            preflight = await http.options(
                "/api/sessions",
                headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"},
            )
            assert preflight.status_code == 204
            assert "DELETE" in preflight.headers["access-control-allow-methods"]
            bad = await http.options("/api/sessions", headers={"Origin": "https://evil.example"})
            assert bad.status_code == 403
            for origin in (ALLOWED, server.url):
                async with server.socket(origin=origin) as ws:
                    assert (await ws.call("system", type="ping"))["type"] == "pong"
            with pytest.raises(InvalidStatus):
                async with server.socket(origin="https://evil.example"):
                    pass


async def test_request_bodies_are_limited(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, max_body=2048) as server, server.client() as http:
            big = await http.post("/login", content=b"token=" + b"x" * 4096)
            assert big.status_code == 413 and "max_body_bytes" in big.json()["hint"]

            async def chunks() -> AsyncIterator[bytes]:
                yield b"token="
                yield b"x" * 4096

            streamed = await http.post("/login", content=chunks())
            assert streamed.status_code == 413 and COOKIE not in streamed.cookies


async def test_http_client_errors_never_leak_the_token(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(None) as http:
            texts = [(await http.get(p)).text for p in ("/", "/login", "/api/config")]
    assert all(TOKEN not in text for text in texts)


async def test_answers_carry_security_headers(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            page = await http.get("/")
            api = await http.get("/api/config")
    for answer in (page, api):
        policy = answer.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"


async def test_near_miss_origins_and_methods_without_a_token_are_refused(
    home: Path, work: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            port = server.url.rsplit(":", 1)[1]
            near = [
                "null",
                server.url.upper(),
                server.url + "/",
                f"http://127.0.0.1:{int(port) + 1}",
                f"{server.url}.evil.example",
                f"http://localhost:{port}",
                "",
            ]
            for origin in near:
                answer = await http.get("/api/config", headers={"Origin": origin})
                assert answer.status_code == 403, origin
                with pytest.raises(InvalidStatus):
                    async with server.socket(origin=origin):
                        pass
        async with served(home, work, llm) as server, server.client(None) as anonymous:
            for method in ("HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"):
                answer = await anonymous.request(method, "/api/sessions")
                assert answer.status_code == 401, method
            for path in ("/api/config?token=x",):
                assert (await anonymous.get(path)).status_code in (401, 404), path
                assert TOKEN not in (await anonymous.get(path)).text


async def raw_get(url: str, target: str, headers: tuple[str, ...] = ()) -> tuple[int, bytes]:
    """``GET target`` sent byte for byte (an HTTP client would normalise ``..`` away or
    refuse an odd header): the status and the whole answer."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        head = [f"GET {target} HTTP/1.1", f"Host: {host}", "Connection: close", *headers]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        async with asyncio.timeout(10):
            answer = await reader.read(-1)
    finally:
        writer.close()
    return int(answer.split(b" ", 2)[1]), answer


@pytest.mark.parametrize(
    "target",
    [
        "/login/../api/config",
        "/static/../api/config",
        "/login/%2e%2e/api/config",
        "/static/..%2fapi/config",
        "//api/config",
        "/./api/config",
    ],
)
async def test_dot_segments_sent_raw_never_pass_the_guard(
    home: Path, work: Path, target: str
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            status, answer = await raw_get(server.url, target)
    assert status == 401, (target, status)
    assert TOKEN.encode() not in answer and b'"provider"' not in answer


@pytest.mark.parametrize(
    "header",
    [
        "Authorization: Bearer",
        "Authorization: Bearer ",
        "Authorization: Bearer \t ",
        "Authorization: bearer",
        f"Authorization: Bearer {TOKEN[:8]}",
        f"Authorization: Bearer {TOKEN} {TOKEN}",
        f"Authorization: Basic {TOKEN}",
        f"Authorization: {TOKEN}",
    ],
)
async def test_an_empty_or_partial_bearer_token_is_refused(
    home: Path, work: Path, header: str
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server:
            status, _ = await raw_get(server.url, "/api/config", (header,))
            ok, _ = await raw_get(server.url, "/api/config", (f"Authorization: Bearer {TOKEN}",))
    assert (status, ok) == (401, 200), header


JSON = "application/json"
HTML = "text/html"
OWN = "own"
"""Stands for the server's own origin in ``ORIGIN_RULES`` (its port is known only at run time)."""
ORIGIN_RULES = {
    # name: (path, Origin, listed in allowed_origins, status, content type of the answer)
    "the form from the page itself": ("/login", OWN, (), 303, None),
    "the form from another site": ("/login", "https://evil.example", (), 403, HTML),
    "the form from nowhere (null)": ("/login", "null", (), 403, HTML),
    "the form from null, listed": ("/login", "null", ("null",), 403, HTML),
    "the form from markup": ("/login", 'https://x.example"><script>', (), 403, HTML),
    "the form from a listed site": ("/login", ALLOWED, (ALLOWED,), 303, None),
    "the API from another site": ("/api/config", "https://evil.example", (), 403, JSON),
    "the API from null, listed": ("/api/config", "null", ("null",), 403, JSON),
}


@pytest.mark.parametrize(
    ("path", "origin", "listed", "status", "kind"), ORIGIN_RULES.values(), ids=ORIGIN_RULES.keys()
)
async def test_the_origin_rule(
    home: Path,
    work: Path,
    path: str,
    origin: str,
    listed: tuple[str, ...],
    status: int,
    kind: str | None,
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm, origins=listed) as server, server.client() as http:
            sent = server.url if origin == OWN else origin
            if path == "/login":
                answer = await http.post(path, data={"token": TOKEN}, headers={"Origin": sent})
            else:
                answer = await http.get(path, headers={"Origin": sent})
    assert answer.status_code == status
    if kind is not None:
        assert answer.headers["content-type"].startswith(kind)
    if kind == HTML:  # a page a person can read, with the form, not the config advice
        assert '<form method="post" action="/login">' in answer.text
        assert "Open the address openheim serve printed" in answer.text
        assert "allowed_origins" not in answer.text and '"><script>' not in answer.text


async def test_the_pages_send_their_origin_but_no_referrer_elsewhere(
    home: Path, work: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            login = await http.get("/login")
            page = await http.get("/")
    for answer in (login, page):  # no-referrer would make the form post with Origin: null
        assert answer.headers["referrer-policy"] == "same-origin"
