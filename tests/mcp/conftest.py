"""Fixtures for the MCP client tests: the test server's command, a tag to find its processes,
an HTTP instance of it on a free loopback port, and a process-table check for leaks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.config.schema import McpServerEntry

SERVER = str(Path(__file__).parent / "servers" / "test_server.py")


def tagged_pids(tag: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line holds ``tag``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique marker for this test's server processes; none may outlive the test."""
    marker = f"oh-mcp-{uuid.uuid4().hex}"
    yield marker
    assert tagged_pids(marker) == [], "MCP server processes leaked"


def stdio_entry(tag: str, mode: str = "stdio", **kw: object) -> McpServerEntry:
    return McpServerEntry(command=sys.executable, args=[SERVER, mode, tag], **kw)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_url(tag: str) -> Iterator[str]:
    """The test server over streamable HTTP on a free loopback port (a subprocess)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port), tag],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the HTTP test server exited"
                assert time.monotonic() < deadline, "the HTTP test server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)
