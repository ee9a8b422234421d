"""Ctrl-C during a search that runs for many seconds ends ``openheim run`` within a second."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from openheim.testing import FakeLLMServer
from tests import slow_search
from tests.cli.test_cli import configure, start_run

WITHIN = 1.0


async def test_interrupt_stops_a_running_search(home: Path, work: Path) -> None:
    slow_search.plant(work)
    with FakeLLMServer([slow_search.SEARCH, "never"]) as server:
        configure(home, server)
        proc = start_run(home, work, "find it")
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
