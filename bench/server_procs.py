"""The processes of ``server_ws.py``: a ``FakeLLMServer`` that notes when it sends each delta,
``openheim serve``, and a plain Starlette WebSocket echo server as the baseline.

Each runs in a process of its own so that none of them takes the others' interpreter lock;
times are ``time.monotonic()``, one clock for every process on Linux.
"""

from __future__ import annotations

import gc
import os
import re
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MARK = re.compile(rb"s(\d+)\.(\d+)\|")
TOKEN = "bench-token-0123456789abcdef"


def note(sent: dict[tuple[int, int], float], data: bytes) -> None:
    """Note now as the time each delta mark in ``data`` leaves (the first time it is seen: a
    chunk the socket took only in part is written again, the rest by the stream's thread)."""
    now = time.monotonic()
    for session, index in MARK.findall(data):
        sent.setdefault((int(session), int(index)), now)


class _Tap:
    """A handler's ``wfile`` that notes when each delta mark leaves for the socket: the time
    is taken just before the write, since after it this thread may wait for the interpreter
    lock (a thousand handler threads share it), which would shorten the latency measured."""

    def __init__(self, inner: Any, sent: dict[tuple[int, int], float]) -> None:
        self.inner = inner
        self.sent = sent

    def write(self, data: bytes) -> int:
        note(self.sent, data)
        written: int = self.inner.write(data)
        return written

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def fake_llm(conn: Connection) -> None:
    """Serve replies of as many marked deltas as the prompt's ``cCOUNT`` says, as far apart as
    its ``dSECONDS`` says; on ``report``, send back when each delta was sent since the last
    report; stop on anything else."""
    from openheim.testing import FakeLLMServer, FakeReply, RecordedRequest, fake_pacer, fake_server

    # The fake stands in for a model server on other machines. With a thousand handler threads
    # its own full collections took 20 to 50 ms, and the streams it held back meanwhile then
    # left in one burst (over 200 deltas within 5 ms) that no model sends. So it runs without
    # its cycle collector for the few minutes of a run; reference counting frees the rest.
    gc.disable()
    sent: dict[tuple[int, int], float] = {}
    setup = fake_server._Handler.setup

    def tapped(handler: Any) -> None:
        setup(handler)
        handler.wfile = _Tap(handler.wfile, sent)

    fake_server._Handler.setup = tapped  # type: ignore[method-assign,assignment]

    class TappedSocketWriter(fake_pacer.SocketWriter):
        """The pacer's writer (slowed replies), noting the marks as ``_Tap`` does."""

        def write(self, data: bytes, /) -> int:
            note(sent, data)
            return super().write(data)

    fake_server.SocketWriter = TappedSocketWriter  # type: ignore[attr-defined]

    def reply(request: RecordedRequest) -> FakeReply:
        prompt = str(request.body["messages"][-1]["content"])
        session = re.search(r"s(\d+)", prompt)
        delay = re.search(r"d([\d.]+)", prompt)
        count = re.search(r"c(\d+)", prompt)
        chunks = int(count.group(1)) if count else 10
        pieces = [f"s{session.group(1) if session else 0}.{i}| " for i in range(chunks)]
        return FakeReply(chunks=pieces, chunk_delay=float(delay.group(1)) if delay else 0.0)

    with FakeLLMServer(default=reply) as server:
        conn.send(server.base_url)
        while conn.recv() == "report":  # what was sent since the last report
            conn.send(dict(sent))
            sent.clear()


def start_openheim(home: Path, work: Path, base_url: str) -> tuple[subprocess.Popen[str], str]:
    """``openheim serve`` on a free loopback port, against the fake model; its ``ws://`` URL."""
    (home / "config.toml").write_text(
        f'default_provider = "fake"\napproval = "auto"\n[providers.fake]\n'
        f'api_base = "{base_url}"\ndefault_model = "fake-model"\n'
    )
    (home / "system.md").write_text("You are a benchmark.\n")
    env = {**os.environ, "OPENHEIM_HOME": str(home), "OPENHEIM_SERVER_TOKEN": TOKEN}
    process = subprocess.Popen(
        [sys.executable, "-m", "openheim", "serve", "--port", "0", "--work-dir", str(work)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
    if found is None:
        process.kill()
        raise RuntimeError(f"openheim serve did not start: {line!r}")
    return process, found.group(1).replace("http://", "ws://")


ECHO_APP = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

async def echo(ws):
    await ws.accept()
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        count, text = message["text"].split(" ", 1)
        for i in range(int(count)):
            await ws.send_text(f"{i} {text}")

app = Starlette(routes=[WebSocketRoute("/ws", echo)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            ws_per_message_deflate=False)
"""


def start_echo() -> tuple[subprocess.Popen[str], str]:
    """A plain Starlette WebSocket server that answers ``"N text"`` with N frames."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-c", ECHO_APP, str(port)], text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"ws://127.0.0.1:{port}/ws"
        threading.Event().wait(0.05)
    process.kill()
    raise RuntimeError("the echo server did not start")


def rss_kib(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
