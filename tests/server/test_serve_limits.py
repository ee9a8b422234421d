"""``openheim serve`` under resource attacks, as a real process on loopback: floods of sockets
that never send a request head, heads sent too slowly or too long, and token files that are no
regular file. Every flood is bounded in count and time; the server runs with 1024 file
descriptors, as many systems give it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
from websockets.asyncio.client import connect

from openheim.testing import FakeLLMServer
from tests.cli.test_cli import env_for
from tests.server.support import write_config

TOKEN = "limits-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOOD = 1200
PROMPT_S = 4.0
"""The most a legitimate request may take while a flood is held."""
SLACK_S = 15.0
"""Time allowed past the header timeout for every flood socket to be closed."""


def _files_1024() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@contextlib.contextmanager
def serving(home: Path, work: Path, server: str) -> Iterator[str]:
    """``openheim serve`` with ``server`` in its ``[server]`` table; yields its base URL."""
    with FakeLLMServer() as llm:
        write_config(home, llm, provider=f"\n[server]\n{server}\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "openheim", "serve", "--port", "0"],
            cwd=work,
            env=env_for(home, OPENHEIM_SERVER_TOKEN=TOKEN),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            preexec_fn=_files_1024,
        )
        try:
            assert process.stdout is not None
            found = re.search(r"(http://127\.0\.0\.1:\d+)/", process.stdout.readline())
            assert found is not None, "serve did not start"
            yield found.group(1)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def _open(port: int, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    """What the server sends before it closes the connection."""
    got = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(65536):
            got += chunk
    return got


async def _legitimate(url: str) -> float:
    """A REST request and a ``/ws`` connection from 127.0.0.1; the seconds they took."""
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=PROMPT_S) as client:
        assert (await client.get("/health")).status_code == 200
    ws_url = url.replace("http://", "ws://") + "/ws"
    async with asyncio.timeout(PROMPT_S):
        async with connect(ws_url, additional_headers=AUTH) as ws:
            assert '"connected"' in str(await ws.recv())
    return time.monotonic() - started


class Flood(NamedTuple):
    addresses: int
    """Source addresses 127.0.0.2 onwards, the sockets spread evenly over them."""
    server: str
    refused_at_least: int
    """How many sockets must be answered 503 at once."""


HEAD_TIMEOUT = "header_timeout_secs = 8\n"
FLOODS = {
    "one address": Flood(1, HEAD_TIMEOUT, FLOOD - 64),
    "40 addresses past max_connections": Flood(40, HEAD_TIMEOUT + "max_connections = 500\n", 0),
}  # fmt: skip


@pytest.mark.parametrize("flood", FLOODS.values(), ids=FLOODS.keys())
async def test_half_open_sockets_neither_lock_others_out_nor_stay(
    home: Path, work: Path, flood: Flood
) -> None:
    with serving(home, work, flood.server) as url:
        port = _port(url)
        sources = [f"127.0.0.{2 + i % flood.addresses}" for i in range(FLOOD)]
        async with asyncio.timeout(60):
            sockets = await asyncio.gather(*(_open(port, source) for source in sources))
        ends = [asyncio.create_task(_until_closed(reader)) for reader, _ in sockets]
        took = await _legitimate(url)
        started = time.monotonic()
        async with asyncio.timeout(8 + SLACK_S):
            answers = await asyncio.gather(*ends)
        waited = time.monotonic() - started
        for _, writer in sockets:
            writer.close()
    assert took < PROMPT_S
    refused = sum(b" 503 " in answer for answer in answers)
    assert refused >= flood.refused_at_least
    assert all(answer in (b"",) or b" 503 " in answer for answer in answers)
    assert waited < 8 + SLACK_S


async def _partial_head(writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> bytes:
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    return await _until_closed(reader)


async def _drip_after_a_request(
    writer: asyncio.StreamWriter, reader: asyncio.StreamReader
) -> bytes:
    """A complete request, then the next head one byte at a time (which keeps an idle timer
    from firing) until the server closes the connection (bounded: 200 bytes)."""
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
    closed = asyncio.create_task(_until_closed(reader))
    for byte in head:
        if closed.done():
            break
        with contextlib.suppress(ConnectionError):
            writer.write(bytes([byte]))
            await writer.drain()
        await asyncio.wait([closed], timeout=0.5)
    return await closed


async def _huge_head(writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> bytes:
    closed = asyncio.create_task(_until_closed(reader))
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ")
    for _ in range(64):  # 4 MiB at most
        if closed.done():
            break
        with contextlib.suppress(ConnectionError):
            writer.write(b"a" * 65536)
            await writer.drain()
    return await closed


SLOW = {
    "partial head": (_partial_head, b""),
    "next head dripped on a kept-alive connection": (_drip_after_a_request, b"401"),
    "head over 64 KiB": (_huge_head, b" 431 "),
}  # fmt: skip


@pytest.mark.parametrize(("attack", "expected"), SLOW.values(), ids=SLOW.keys())
async def test_a_head_too_slow_or_too_long_is_closed(
    home: Path,
    work: Path,
    attack: Callable[[asyncio.StreamWriter, asyncio.StreamReader], Awaitable[bytes]],
    expected: bytes,
) -> None:
    timeout = 2.0
    with serving(home, work, f"header_timeout_secs = {timeout}\nidle_timeout_secs = 30\n") as url:
        reader, writer = await _open(_port(url), "127.0.0.2")
        started = time.monotonic()
        async with asyncio.timeout(timeout + SLACK_S):
            answer = await attack(writer, reader)
        took = time.monotonic() - started
        writer.close()
        assert took < timeout + SLACK_S
        assert expected in answer
        await _legitimate(url)


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


def _folder(tmp: Path) -> Path:
    (tmp / "folder").mkdir()
    return tmp / "folder"


def _big(tmp: Path) -> Path:
    (tmp / "big").write_text("t" * 5000)
    return tmp / "big"


TOKEN_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "/dev/zero": (lambda _: Path("/dev/zero"), "a character device, not a regular file"),
    "/dev/urandom": (lambda _: Path("/dev/urandom"), "a character device, not a regular file"),
    "a FIFO": (_fifo, "a FIFO, not a regular file"),
    "a folder": (_folder, "a folder, not a regular file"),
    "over 4 KiB": (_big, "larger than 4 KiB"),
}  # fmt: skip


@pytest.mark.parametrize(("make", "reason"), TOKEN_FILES.values(), ids=TOKEN_FILES.keys())
def test_a_token_file_that_is_no_small_regular_file_is_refused(
    home: Path, work: Path, tmp_path: Path, make: Callable[[Path], Path], reason: str
) -> None:
    path = make(tmp_path)
    with FakeLLMServer() as llm:
        write_config(home, llm, provider=f'\n[server]\ntoken_file = "{path}"\n')
        result = subprocess.run(
            [sys.executable, "-m", "openheim", "serve", "--port", "0"],
            cwd=work, env=env_for(home), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"cannot read [server] token_file {path}: it is {reason}" in lines[0]
