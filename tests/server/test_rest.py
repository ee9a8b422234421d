"""The REST routes through a real uvicorn: every route without, with a wrong and with the right
token, and what each answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.runtime.checkpoints import CheckpointStore, TurnRecorder
from openheim.testing import FakeLLMServer
from tests.server.support import TOKEN, served

ROUTES = [
    "/health",
    "/api/config",
    "/api/models",
    "/api/skills",
    "/api/tools",
    "/api/mcp-servers",
    "/api/sessions",
    "/api/openapi.json",
    "/api/sessions/00000000-0000-4000-8000-000000000000",
    "/api/sessions/00000000-0000-4000-8000-000000000000/export",
]


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789"])
async def test_every_route_refuses_a_missing_or_wrong_token(
    home: Path, work: Path, token: str | None
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(token) as http:
            for route in ROUTES:
                answer = await http.get(route)
                assert answer.status_code == 401, route
                assert "token" in answer.json()["error"]
            deleted = await http.delete(ROUTES[-2])
            assert deleted.status_code == 401


async def test_the_page_without_a_token_leads_to_the_login_page(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(None) as http:
            page = await http.get("/")
            assert page.status_code == 303 and page.headers["location"] == "/login"
            login = await http.get("/login")
            assert login.status_code == 200 and "token" in login.text


async def test_every_route_answers_with_the_token(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            assert (await http.get("/health")).json()["status"] == "ok"
            config = (await http.get("/api/config")).json()
            assert config["provider"] == "fake" and config["work_dir"] == str(work.resolve())
            providers = (await http.get("/api/models")).json()["providers"]
            fake = next(p for p in providers if p["provider"] == "fake")
            assert fake["models"] == ["fake-model", "fake-small"] and fake["default"]
            tools = {t["name"] for t in (await http.get("/api/tools")).json()["tools"]}
            assert {"read_file", "write_file"} <= tools
            assert (await http.get("/api/skills")).json() == {"skills": []}
            assert (await http.get("/api/mcp-servers")).json() == {"servers": []}
            document = (await http.get("/api/openapi.json")).json()
            assert document["openapi"] == "3.1.0" and "/api/sessions" in document["paths"]
            assert (await http.get("/")).status_code == 200


async def test_config_never_shows_a_key(home: Path, work: Path) -> None:
    key = 'api_key = "sk-planted-secret-value"'
    with FakeLLMServer() as llm:
        async with served(home, work, llm, provider=key) as server, server.client() as http:
            texts = [(await http.get(route)).text for route in ROUTES[:7]]
            base = llm.base_url
    for text in texts:
        assert "sk-planted" not in text and base not in text and TOKEN not in text


@pytest.fixture(params=["sqlite", "postgres"])
def store_line(request: pytest.FixtureRequest) -> str:
    """The config line choosing the session store: none (SQLite), or a fresh PostgreSQL
    database's ``store_url``."""
    if request.param == "sqlite":
        return ""
    return f'store_url = "{request.getfixturevalue("pg_url")}"'


async def test_sessions_list_get_export_and_delete(home: Path, work: Path, store_line: str) -> None:
    with FakeLLMServer(["first answer", "second answer"]) as llm:
        async with served(home, work, llm, extra=store_line) as server, server.client() as http:
            runtime = server.context.runtime
            ids = []
            for text in ("one", "two"):
                session = await runtime.new_session()
                await session.prompt(text)
                ids.append(session.id)
                await session.close()
            page = (await http.get("/api/sessions", params={"limit": 1})).json()
            assert [s["id"] for s in page["sessions"]] == [ids[1]]
            rest = (await http.get("/api/sessions", params={"before": page["next"]})).json()
            assert [s["id"] for s in rest["sessions"]] == [ids[0]]
            found = (await http.get("/api/sessions", params={"q": "second"})).json()
            assert [s["id"] for s in found["sessions"]] == [ids[1]]
            one = (await http.get(f"/api/sessions/{ids[0]}")).json()
            assert one["session"]["id"] == ids[0]
            assert [m["role"] for m in one["messages"]] == ["user", "assistant"]
            md = await http.get(f"/api/sessions/{ids[0]}/export", params={"format": "md"})
            assert md.headers["content-type"].startswith("text/markdown")
            assert "first answer" in md.text
            js = await http.get(f"/api/sessions/{ids[0]}/export", params={"format": "json"})
            assert js.json()["session"]["id"] == ids[0]
            bad = await http.get(f"/api/sessions/{ids[0]}/export", params={"format": "pdf"})
            assert bad.status_code == 400
            assert (await http.delete(f"/api/sessions/{ids[0]}")).json() == {"deleted": ids[0]}
            assert (await http.get(f"/api/sessions/{ids[0]}")).status_code == 404
    assert (home / "openheim.db").exists() == (not store_line)


async def test_deleting_a_session_drops_its_checkpoints(home: Path, work: Path) -> None:
    (work / "f.txt").write_text("the user's text")
    with FakeLLMServer(["answer"]) as llm:
        async with served(home, work, llm) as server, server.client() as http:
            session = await server.context.runtime.new_session()
            await session.prompt("hello")
            await session.close()
            assert session.id is not None
            recorder = TurnRecorder(CheckpointStore(home), session.id)
            recorder.begin(0, "hello")
            recorder.before_write(work / "f.txt")
            folder = home / "checkpoints" / session.id
            assert list(folder.glob("*.json"))
            assert (await http.delete(f"/api/sessions/{session.id}")).status_code == 200
    assert not folder.exists()


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/sessions/not-an-id", 400),
        ("/api/sessions/ABCDEF00-0000-4000-8000-000000000000", 400),
        ("/api/sessions/00000000-0000-4000-8000-000000000000", 404),
        ("/api/sessions/00000000-0000-4000-8000-000000000000%0A", 400),
        ("/api/sessions?limit=0", 400),
        ("/api/sessions?limit=abc", 400),
        ("/api/sessions?before=nan", 400),
        ("/api/sessions?before=1&before=2", 400),
        ("/api/sessions?limit=5&limit=5", 400),
        ("/api/nothing-here", 404),
    ],
)
async def test_bad_requests_get_a_4xx_with_a_hint(
    home: Path, work: Path, path: str, status: int
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            answer = await http.get(path)
            delete = await http.delete(path) if path.startswith("/api/sessions/") else None
    assert answer.status_code == status
    if status == 400:
        assert answer.json()["hint"]
    if delete is not None:
        assert delete.status_code == status


async def test_unknown_query_parameters_are_refused(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client() as http:
            typo = await http.get("/api/sessions", params={"limt": 5})
            health = await http.get("/health", params={"x": 1})
    assert typo.status_code == 400 and "limit" in typo.json()["hint"]
    assert health.status_code == 400 and "'x'" in health.json()["error"]


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789", TOKEN])
async def test_healthz_answers_ok_to_anyone_and_says_nothing_more(
    home: Path, work: Path, token: str | None
) -> None:
    """A load balancer's health check carries no token: ``/healthz`` needs none, and so tells
    nothing about the server (no version, no uptime)."""
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.client(token) as http:
            answer = await http.get("/healthz")
            assert (answer.status_code, answer.text) == (200, "ok\n")
            assert answer.headers["content-type"].startswith("text/plain")
            assert answer.headers["cache-control"] == "no-store"
            assert (await http.post("/healthz")).status_code == 405
