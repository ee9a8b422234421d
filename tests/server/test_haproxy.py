"""Three ``openheim serve`` replicas on one PostgreSQL store behind HAProxy (``replicas.py``):
a session made through one connection is resumed and continued through others that land on
other replicas, by a web client (``/ws``) and an ACP client (``/acp``); a replica killed with
SIGKILL while idle costs nothing: its client reconnects through HAProxy to another replica
and goes on with the session; the web page, in Chromium, works through HAProxy."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.ws import create_websocket_stream
from playwright.async_api import Browser, expect

from openheim.testing import FakeLLMServer, FakeReply
from tests.acp.harness import RecordingClient
from tests.server.replicas import Fleet, fleet, haproxy_config, haproxy_program
from tests.server.support import TOKEN, Socket

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TIMEOUT_MS = 10_000
CERTIFICATE = "/etc/haproxy/certs/openheim.pem"


def landed(socket: Socket) -> str:
    """The replica a ``/ws`` connection went to (HAProxy's ``X-Replica`` on the upgrade)."""
    assert socket.conn is not None and socket.conn.response is not None
    return str(socket.conn.response.headers["x-replica"])


async def prompt(socket: Socket, session_id: str, text: str) -> list[dict[str, Any]]:
    await socket.call("agent", type="prompt", session_id=session_id, text=text)
    events = await socket.events_until_finished(session_id)
    assert events[-1]["event"]["type"] == "finished", events[-1]
    return events


async def over_acp(served: Fleet, work: Path, session_id: str) -> tuple[str, RecordingClient]:
    """Load the session over ACP through HAProxy, prompt it once; the replica it landed on."""
    client = RecordingClient()
    transport = await create_websocket_stream(f"{served.ws_url}/acp", headers=AUTH)
    replica = str(transport._ws.response.headers["x-replica"])  # type: ignore[attr-defined]
    conn = ClientSideConnection(client, transport, use_unstable_protocol=True)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities
        )
        await conn.load_session(cwd=str(work), session_id=session_id)
        result = await conn.prompt(session_id=session_id, prompt=[text_block("second")])
        assert result.stop_reason == "end_turn"
    finally:
        await conn.close()
    return replica, client


def messages(served: Fleet, session_id: str) -> list[str]:
    answer = httpx.get(f"{served.url}/api/sessions/{session_id}", headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    return [m["content"][0]["text"] for m in answer.json()["messages"]]


async def test_a_session_moves_between_replicas_and_survives_a_killed_one(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    replies = ["first answer", "second answer", "third answer"]
    with FakeLLMServer(replies) as llm, fleet(tmp_path, work, llm, pg_url) as served:
        async with Socket(f"{served.ws_url}/ws", AUTH, {}) as web:
            first = landed(web)
            sid = (await web.call("agent", type="open"))["session_id"]
            await prompt(web, sid, "first")
            second, editor = await over_acp(served, work, sid)
            assert second != first
            assert "first answer" in editor.text(sid) and "second answer" in editor.text(sid)
            served.kill(first)  # idle: no prompt runs anywhere
        async with Socket(f"{served.ws_url}/ws", AUTH, {}) as again:
            assert landed(again) not in (first, "")
            resumed = await again.call("agent", type="resume", session_id=sid)
            assert resumed["type"] == "opened" and not resumed["busy"]
            events = await prompt(again, sid, "third")
        assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
        said = messages(served, sid)
    assert said == ["first", "first answer", "second", "second answer", "third", "third answer"]


async def test_the_web_page_through_the_load_balancer(
    tmp_path: Path, work: Path, pg_url: str, browser: Browser, artefacts: Path
) -> None:
    """Logged in with the token on one replica, the page's later requests (its files, its
    socket, the session list after a reload) land on the others, which take the same cookie."""
    (work / "README.md").write_text("# Demo\n")
    replies = [FakeReply(chunks=["Hello ", "from ", "**every replica**"])]
    with FakeLLMServer(replies) as llm, fleet(tmp_path, work, llm, pg_url) as served:
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(TIMEOUT_MS)
        replicas: set[str] = set()
        page.on("response", lambda r: replicas.add(r.headers.get("x-replica", "")))
        await page.goto(f"{served.url}/login")
        await page.fill("#token", TOKEN)
        await page.click("button[type=submit]")
        await expect(page.locator("#files")).to_contain_text("README.md")
        await page.fill("#prompt", "Say hello")
        await page.click("#send")
        await expect(page.locator(".msg.assistant .text strong")).to_have_text("every replica")
        await page.reload()
        await expect(page.locator("#sessions li")).to_have_count(1)
        await page.click("#sessions li .name")
        await expect(page.locator(".msg.user")).to_have_text("Say hello")
        await expect(page.locator(".msg.assistant strong")).to_have_text("every replica")
        await page.screenshot(path=artefacts / "through-haproxy.png")
    assert {"replica1", "replica2", "replica3"} <= replicas


def test_the_deploy_guide_shows_the_configuration_the_tests_run(tmp_path: Path) -> None:
    """docs/deploy.md shows ``haproxy_config`` for its example fleet, with TLS, and HAProxy
    accepts it (here with a throw-away certificate in place of the guide's)."""
    guide = (Path(__file__).parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    servers = [f"10.0.0.1{n}:8080" for n in (1, 2, 3)]
    shown = haproxy_config(":443", servers, tls=CERTIFICATE)
    assert f"```haproxy\n{shown}```\n" in guide
    pem = tmp_path / "openheim.pem"
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(pem)]
    made = subprocess.run(
        ["openssl", "req", "-x509", *key, "-days", "1", "-subj", "/CN=localhost", "-out", "-"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    pem.write_bytes(pem.read_bytes() + made.stdout)
    config = tmp_path / "haproxy.cfg"
    config.write_text(shown.replace(CERTIFICATE, str(pem)))
    checked = subprocess.run(
        [haproxy_program(), "-c", "-f", str(config)], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
