"""Two ``openheim serve`` processes on one PostgreSQL store (one token, nothing on disk in
common): the login link one prints works once, through the other."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx

from openheim.testing import FakeLLMServer
from tests.server.support import write_config
from tests.server.test_serve_cli import base_of, read_start, start, stop

TOKEN = "one-token-for-every-replica-0123456789"


def _replica(home: Path, work: Path, pg_url: str) -> tuple[subprocess.Popen[str], str, str]:
    """A server on the shared store: its process, base URL and login code."""
    process = start(home, work, OPENHEIM_SERVER_TOKEN=TOKEN, OPENHEIM_STORE_URL=pg_url)
    lines = read_start(process)
    code = re.search(r"/login\?code=(\S+)", lines[1])
    assert code is not None, lines
    return process, base_of(lines), code.group(1)


def test_a_login_link_of_one_replica_works_once_through_another(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    homes = [tmp_path / "machine-a", tmp_path / "machine-b"]
    with FakeLLMServer() as llm:
        for home in homes:
            home.mkdir()
            write_config(home, llm)
        first, first_base, first_code = _replica(homes[0], work, pg_url)
        try:
            second, second_base, second_code = _replica(homes[1], work, pg_url)
            try:
                across = httpx.get(f"{second_base}/login?code={first_code}")
                again = httpx.get(f"{first_base}/login?code={first_code}")
                back = httpx.get(f"{first_base}/login?code={second_code}")
                wrong = httpx.get(f"{second_base}/login?code=not-{second_code}")
                cookie = across.cookies.get("openheim_auth")
                page = httpx.get(
                    f"{first_base}/api/config", cookies={"openheim_auth": cookie or ""}
                )
            finally:
                stop(second)
        finally:
            stop(first)
    assert across.status_code == 303 and cookie  # printed by the first, used at the second
    assert page.status_code == 200  # that cookie works on every replica
    assert again.status_code == 401 and "used already" in again.text  # once only
    assert back.status_code == 303 and wrong.status_code == 401
