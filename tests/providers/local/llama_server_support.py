"""Shared helpers for the llama.cpp server tests: settings, a fake server, process inspection."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.llama_server import LlamaServerProvider

HOST = "127.0.0.1"
PYTHON_SERVER = (sys.executable, "-m", "llama_cpp.server")
FAKE_SERVER = """
import http.server, json, os, pathlib, sys
mode, marker = sys.argv[1], pathlib.Path(sys.argv[2])
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.reply(200, {"data": [{"id": "fake-model"}]})
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        if mode == "always" or not marker.exists():
            marker.touch()
            print("fake server dying on purpose", flush=True)
            os._exit(3)
        message = {"role": "assistant", "content": "survived"}
        self.reply(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
print("fake server listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def settings(data_dir: Path, **extra: object) -> ProviderSettings:
    base: dict[str, object] = {
        "n_ctx": 1024,
        "temperature": 0.0,
        "server_command": PYTHON_SERVER,
        "data_dir": data_dir,
        "startup_timeout": 60.0,
    }
    return ProviderSettings(
        "local",
        "llama_server",
        "",
        "SmolLM2-135M-Instruct",
        **{**base, **extra},  # type: ignore[arg-type]
    )


def ask(text: str = "What is 2 + 2?") -> ModelRequest:
    return ModelRequest(
        "SmolLM2-135M-Instruct", (Message.user(text),), max_tokens=12, temperature=0.0
    )


async def drain(provider: LlamaServerProvider) -> list[StreamItem]:
    return [item async for item in provider.stream(ask())]


def answer_of(items: list[StreamItem]) -> str:
    response = items[-1]
    assert isinstance(response, ModelResponse)
    return response.message.text


def wait_until(condition: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def state_of(pid: int) -> str | None:
    """A process's state letter (``Z`` for a zombie), or None once it is gone entirely."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def waitable(pid: int) -> bool:
    """Whether a child of this process has ended and awaits reaping (checked without reaping)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def processes() -> Iterator[tuple[int, str, int, int]]:
    """Every process: pid, state, parent pid, process group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue
        yield int(stat.parent.name), state, int(ppid), int(pgrp)


def children() -> set[int]:
    """Processes whose parent is this test process, zombies included."""
    return {pid for pid, _, ppid, _ in processes() if ppid == os.getpid()}


def assert_gone(pid: int) -> None:
    """The process was reaped (no zombie) and nothing of its group runs on."""
    assert state_of(pid) is None
    assert [p for p, state, _, pgrp in processes() if pgrp == pid and state != "Z"] == []


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Every test must stop (and reap) every process it started, whatever happened."""
    before = children()
    yield
    assert children() <= before
