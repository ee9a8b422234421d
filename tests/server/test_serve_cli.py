"""``openheim serve`` as a process: the token it generates or is given, what it prints, the
addresses it refuses, and that ``run`` never loads the server's libraries."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from openheim.testing import FakeLLMServer
from tests.cli.test_cli import env_for, openheim
from tests.server.support import write_config
from tests.test_imports import modules_after

SERVER_MODULES = {"starlette", "uvicorn", "websockets", "openheim.server"}


def start(home: Path, work: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "openheim", "serve", "--port", "0", *args],
        cwd=work,
        env=env_for(home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def read_start(process: subprocess.Popen[str]) -> list[str]:
    """The lines it prints at start (up to the login link, and the token line if any)."""
    assert process.stdout is not None
    return [process.stdout.readline() for _ in range(2)]


def stop(process: subprocess.Popen[str]) -> int:
    os.killpg(process.pid, signal.SIGTERM)
    return process.wait(timeout=30)


def test_a_generated_token_is_stored_privately_and_works(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        write_config(home, llm)
        process = start(home, work)
        try:
            url_line, link_line = read_start(process)
            assert process.stdout is not None
            token_line = process.stdout.readline()
            base = re.search(r"(http://127\.0\.0\.1:\d+)/", url_line)
            assert base is not None and "/login?code=" in link_line
            stored = home / "server-token"
            token = stored.read_text()
            assert token in token_line
            assert stat.S_IMODE(stored.stat().st_mode) == 0o600
            ok = httpx.get(f"{base.group(1)}/health", headers={"Authorization": f"Bearer {token}"})
            refused = httpx.get(f"{base.group(1)}/health")
        finally:
            code = stop(process)
    assert ok.status_code == 200 and refused.status_code == 401
    assert code == 143  # stopped by SIGTERM, as every command reports it


def test_an_explicit_token_is_not_printed(home: Path, work: Path) -> None:
    token = "explicit-token-0123456789abcdef"
    with FakeLLMServer() as llm:
        write_config(home, llm)
        process = start(home, work, OPENHEIM_SERVER_TOKEN=token)
        try:
            lines = read_start(process)
            base = re.search(r"(http://127\.0\.0\.1:\d+)/", lines[0])
            assert base is not None
            ok = httpx.get(f"{base.group(1)}/health", headers={"Authorization": f"Bearer {token}"})
        finally:
            stop(process)
            out, _ = process.communicate(timeout=30)
    assert ok.status_code == 200
    assert token not in "".join(lines) + out
    assert not (home / "server-token").exists()


def test_a_public_address_needs_an_explicit_token(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        write_config(home, llm)
        result = openheim("serve", "--host", "0.0.0.0", "--port", "0", home=home, cwd=work)
    assert result.returncode == 2
    assert "needs an explicit token" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (home / "server-token").exists()


def test_bad_tokens_and_ports_are_one_line_errors(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        write_config(home, llm)
        short = openheim("serve", "--port", "0", home=home, cwd=work, OPENHEIM_SERVER_TOKEN="x")
        port = openheim("serve", "--port", "70000", home=home, cwd=work)
    assert short.returncode == 2 and "too short" in short.stderr
    assert port.returncode == 2 and "not a port" in port.stderr
    assert "Traceback" not in short.stderr + port.stderr


def test_run_never_imports_the_server() -> None:
    loaded = modules_after(
        "from openheim.cli.main import build_parser\nbuild_parser().parse_args(['run', 'hello'])"
    )
    assert not {m.split(".")[0] for m in loaded} & SERVER_MODULES
    assert "openheim.server" not in loaded


def test_a_public_address_is_announced_with_a_tls_warning(home: Path) -> None:
    import io

    from openheim.config.load import load_settings
    from openheim.server.launch import announce
    from openheim.serving.address import Address
    from openheim.serving.auth import Auth

    settings = load_settings(env={"OPENHEIM_HOME": str(home)})
    out = io.StringIO()
    announce(
        Auth("given-token-0123456789", generated=False), settings, Address("10.1.2.3", 9), 9, out
    )
    public = out.getvalue()
    out = io.StringIO()
    announce(Auth("given-token-0123456789", generated=False), settings, Address("::1", 9), 9, out)
    loopback = out.getvalue()
    assert "warning" in public and "TLS" in public and "http://10.1.2.3:9/" in public
    assert "warning" not in loopback and "http://[::1]:9/" in loopback
    assert "given-token" not in public + loopback


def base_of(lines: list[str]) -> str:
    found = re.search(r"(http://127\.0\.0\.1:\d+)/", lines[0])
    assert found is not None, lines
    return found.group(1)


def started(home: Path, work: Path, *args: str) -> tuple[subprocess.Popen[str], str, str]:
    """A server process, its base URL and the line it prints about the token."""
    process = start(home, work, *args)
    lines = read_start(process)
    assert process.stdout is not None
    return process, base_of(lines), process.stdout.readline()


def test_a_restart_keeps_the_token_and_new_token_replaces_it(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        write_config(home, llm)
        first, base, made = started(home, work)
        try:
            login = httpx.post(f"{base}/login", data={"token": (home / "server-token").read_text()})
        finally:
            stop(first)
        token = (home / "server-token").read_text()
        cookie = {"Cookie": f"openheim_auth={login.cookies['openheim_auth']}"}
        second, base, kept = started(home, work)
        try:
            again = httpx.get(f"{base}/api/config", headers=cookie)
        finally:
            stop(second)
            rest, _ = second.communicate(timeout=30)
        third, base, renewed = started(home, work, "--new-token")
        try:
            refused = httpx.get(f"{base}/api/config", headers=cookie)
        finally:
            stop(third)
    assert token in made and again.status_code == 200  # run 1's cookie works on run 2
    assert "kept in" in kept and "--new-token" in kept and token not in kept + rest
    assert refused.status_code == 401 and token not in renewed
    assert (home / "server-token").read_text() in renewed
    assert stat.S_IMODE((home / "server-token").stat().st_mode) == 0o600


def test_new_token_with_a_given_token_is_a_one_line_error(home: Path, work: Path) -> None:
    given = "given-token-0123456789abcdef"
    with FakeLLMServer() as llm:
        write_config(home, llm)
        result = openheim(
            "serve",
            "--port",
            "0",
            "--new-token",
            home=home,
            cwd=work,
            OPENHEIM_SERVER_TOKEN=given,
        )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--new-token replaces the token kept in the data dir" in result.stderr
    assert given not in result.stderr + result.stdout
