"""``openheim mcp serve --http``: streamable HTTP behind a bearer token, driven by the MCP SDK's
client against a real subprocess."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from openheim.testing import FakeLLMServer, FakeReply
from tests.mcp_server.test_prompt_tool import text_of

TOKEN = "test-token-0123456789"
LISTENING = re.compile(r"MCP server on (http://\S+)")


class HttpServer:
    """``openheim mcp serve --http --port 0`` as a subprocess, and what it said on stderr."""

    def __init__(self, home: Path, work: Path, token: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        env["OPENHEIM_HOME"] = str(home)
        if token is not None:
            env["OPENHEIM_SERVER_TOKEN"] = token
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openheim", "mcp", "serve", "--http", "--port", "0"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr = ""
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Every stderr line into the queue, then an empty one at its end (the server exited)."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.put(line)
        self._lines.put("")

    def url(self, timeout: float = 30.0) -> str:
        """The URL it listens on, from its stderr (it fails the test if it exits first)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            assert line, f"the server exited: {self.stderr}"
            self.stderr += line
            if found := LISTENING.search(line):
                return found.group(1)
        raise AssertionError(f"no URL within {timeout} s: {self.stderr}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


class Start(Protocol):
    def __call__(self, token: str | None = TOKEN) -> HttpServer: ...


@pytest.fixture
def start(home: Path, work: Path) -> Iterator[Start]:
    """Starts servers in ``work`` with ``home``; each is stopped after the test."""
    servers: list[HttpServer] = []

    def started(token: str | None = TOKEN) -> HttpServer:
        servers.append(HttpServer(home, work, token))
        return servers[-1]

    yield started
    for server in servers:
        server.stop()


async def test_a_prompt_over_http_with_the_token(start: Start, fake: FakeLLMServer) -> None:
    fake.add(FakeReply(text="over http"))
    url = start().url()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with Client(streamable_http_client(url, http_client=http)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("openheim", {"prompt": "hi"})
    assert {"openheim", "submit", "validate_json", "json_example"} <= names
    assert text_of(result).startswith("over http")


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"])
async def test_a_request_without_the_right_token_gets_401(
    start: Start, fake: FakeLLMServer, header: str | None
) -> None:
    url = start().url()
    headers = {"Authorization": header} if header is not None else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, json=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert fake.requests == []


async def test_a_generated_token_is_stored_private_and_shown(start: Start, home: Path) -> None:
    server = start(token=None)
    url = server.url()
    path = home / "server-token"
    token = path.read_text().strip()
    assert (path.stat().st_mode & 0o777) == 0o600
    assert f"mode 0600): {token}" in server.stderr
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http)) as client:
        assert "openheim" in {tool.name for tool in (await client.list_tools()).tools}


def serve_http(home: Path, work: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``openheim mcp serve --http ARGS`` that is expected to refuse to start."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    return subprocess.run(
        [sys.executable, "-m", "openheim", "mcp", "serve", "--http", *args],
        cwd=work,
        env={**clean, "OPENHEIM_HOME": str(home), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_public_address_needs_a_given_token(home: Path, work: Path) -> None:
    result = serve_http(home, work, "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2
    assert "non-loopback address needs an explicit token" in result.stderr
    assert "Traceback" not in result.stderr and not (home / "server-token").exists()


def test_a_short_token_is_refused(home: Path, work: Path) -> None:
    result = serve_http(home, work, "--port", "0", OPENHEIM_SERVER_TOKEN="short")
    assert result.returncode == 2
    assert "too short" in result.stderr and "Traceback" not in result.stderr
