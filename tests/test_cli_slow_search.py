"""Ctrl-C during a search that runs for many seconds ends ``openheim run`` within a second."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

from openheim.testing import FakeLLMServer
from tests import slow_search
from tests.test_cli import configure, env_for

WITHIN = 1.0


async def test_interrupt_stops_a_running_search(home: Path, work: Path) -> None:
    slow_search.plant(work)
    with FakeLLMServer([slow_search.SEARCH, "never"]) as server:
        configure(home, server)
        proc = subprocess.Popen(
            [sys.executable, "-m", "openheim", "run", "find it"],
            cwd=work,
            env=env_for(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            await asyncio.to_thread(server.wait_for_requests, 1, 30)
            await slow_search.searching(proc.pid, slow_search.bytes_read(proc.pid))
            begun = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _out, err = await asyncio.to_thread(proc.communicate, timeout=30)
            took = time.monotonic() - begun
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert "cancelled" in err
    assert took < WITHIN
    assert len(server.requests) == 1
