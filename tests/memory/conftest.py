from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from openheim.memory import MemoryStore

DEFAULT_VECTOR = [0.0, 0.0, 0.0, 1.0]


@dataclass
class EmbedServer:
    """A loopback embeddings endpoint with fixed vectors per input text.

    It answers OpenAI's ``POST /v1/embeddings`` and Gemini's ``POST /v1beta/models/M:embedContent``;
    ``status`` other than 200 makes every answer an error; ``requests`` records what came in.
    """

    url: str = ""
    vectors: dict[str, list[float]] = field(default_factory=dict)
    status: int = 200
    reply: dict[str, Any] | None = None
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.status != 200:
            return self.status, {"error": {"message": "embedding backend is down"}}
        if self.reply is not None:
            return 200, self.reply
        if path == "/v1/embeddings":
            vector = self.vectors.get(body["input"], DEFAULT_VECTOR)
            return 200, {"object": "list", "data": [{"index": 0, "embedding": vector}]}
        if path.startswith("/v1beta/models/") and path.endswith(":embedContent"):
            vector = self.vectors.get(body["content"]["parts"][0]["text"], DEFAULT_VECTOR)
            return 200, {"embedding": {"values": vector}}
        return 404, {"error": {"message": f"no route {path}"}}


def _handler(server: EmbedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append((self.path, dict(self.headers.items()), body))
            status, payload = server.answer(self.path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean."""

    return Handler


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    state = EmbedServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # a short poll interval only makes shutdown() return promptly
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """A fresh memory of each backend: SQLite in a temporary file, and the PostgreSQL store of
    a fresh database of the test run's cluster (``store_url``). The tests taking it run on both."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    with MemoryStore(tmp_path / "memory.db", url=url) as opened:
        yield opened
