"""Children die with openheim: ``openheim run`` killed with SIGKILL (no clean-up of its own can
run) takes its shell command, its MCP stdio server and its managed llama.cpp server with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, env_for
from tests.mcp.conftest import SERVER

WITHIN = 20.0
"""Seconds allowed for a step (a child showing up, or disappearing); it takes far less."""

HANGING_LLAMA_SERVER = """
import http.server, json, os, pathlib, sys, time
marker = pathlib.Path(sys.argv[1])
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        data = json.dumps({"data": [{"id": "fake-model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_POST(self):
        marker.write_text(str(os.getpid()))
        time.sleep(600)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""
"""A stand-in for llama-server: ready at once, and it never answers a chat request."""


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WITHIN
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its exit status is left to collect)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def descendants(pid: int) -> dict[int, bytes]:
    """The live descendants of ``pid`` (children, their children, ...) and their command
    lines."""
    parents: dict[int, int] = {}
    lines: dict[int, bytes] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
            lines[int(stat.parent.name)] = cmdline
    found = {}
    for child, line in lines.items():
        ancestor, hops = parents.get(child), 0
        while ancestor is not None and ancestor != pid and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor == pid:
            found[child] = line
    return found


@pytest.fixture
def openheim_run(home: Path, work: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Starts ``openheim run ARGS``; afterwards it and every child seen by ``the_child`` are
    killed, whatever the test's outcome."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "openheim", "run", *args],
            cwd=work,
            env=env_for(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        started.append(proc)
        return proc

    SEEN.clear()
    yield start
    for proc in started:
        proc.kill()
        proc.wait()
    for pid in SEEN:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


SEEN: set[int] = set()
"""Children found during the current test."""


def kill_and_expect_gone(openheim: subprocess.Popen[bytes], child: int) -> None:
    assert alive(child)
    openheim.send_signal(signal.SIGKILL)
    assert openheim.wait(timeout=WITHIN) == -signal.SIGKILL
    wait_until(lambda: not alive(child), f"child {child} is gone")


def the_child(openheim: subprocess.Popen[bytes], program: bytes) -> int:
    """The pid of openheim's descendant whose command line contains ``program`` (waits for
    it)."""
    found: list[int] = []

    def started() -> bool:
        found[:] = [pid for pid, cmd in descendants(openheim.pid).items() if program in cmd]
        return bool(found)

    wait_until(started, f"openheim runs {program!r}")
    SEEN.update(found)
    return found[0]


@pytest.mark.parametrize("sandbox", ["off", "require"])
def test_a_shell_command_dies_with_openheim(
    home: Path, openheim_run: Callable[..., subprocess.Popen[bytes]], sandbox: str
) -> None:
    """Unconfined, the command is openheim's child; confined, it runs inside bubblewrap, whose
    PID namespace ends with it."""
    command = {"command": "exec sleep 607", "timeout": 3600}
    reply = FakeReply(tool_calls=[FakeToolCall("execute_command", command)])
    with FakeLLMServer([reply], default="done") as server:
        configure(home, server)
        config = home / "config.toml"
        config.write_text(f'shell_sandbox = "{sandbox}"\n{config.read_text()}')
        openheim = openheim_run("--allow-shell", "--approve", "auto", "wait")
        child = the_child(openheim, b"sleep\x00607")
        kill_and_expect_gone(openheim, child)


def test_an_mcp_stdio_server_dies_with_openheim(
    home: Path, openheim_run: Callable[..., subprocess.Popen[bytes]]
) -> None:
    args = json.dumps([SERVER, "linger", "dies-with-openheim"])  # stays up after stdin closes
    extra = f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
    with FakeLLMServer([FakeReply(text="never finishes", hang_at=2)]) as server:
        configure(home, server, extra=extra)
        openheim = openheim_run("hi")
        server.wait_for_requests(1, timeout=WITHIN)  # the session is open: the server is up
        child = the_child(openheim, b"dies-with-openheim")
        kill_and_expect_gone(openheim, child)


def test_a_managed_llama_server_dies_with_openheim(
    home: Path, tmp_path: Path, openheim_run: Callable[..., subprocess.Popen[bytes]]
) -> None:
    script, marker, model = tmp_path / "llama.py", tmp_path / "asked", tmp_path / "m.gguf"
    script.write_text(HANGING_LLAMA_SERVER)
    model.write_bytes(b"")
    command = json.dumps([sys.executable, str(script), str(marker)])
    (home / "config.toml").write_text(
        'default_provider = "llama"\n[providers.llama]\nkind = "llama_server"\n'
        f'default_model = "m"\nmodel_path = {json.dumps(str(model))}\nn_ctx = 8192\n'
        f"server_command = {command}\n"
    )
    openheim = openheim_run("hi")
    wait_until(lambda: marker.exists() and marker.read_text() != "", "the server is asked")
    child = the_child(openheim, str(script).encode())
    assert child == int(marker.read_text())
    kill_and_expect_gone(openheim, child)
