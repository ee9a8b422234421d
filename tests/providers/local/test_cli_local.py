"""``openheim`` with no provider configured, and ``openheim models``."""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.test_cli import env_for, openheim


def test_no_config_and_no_key_runs_the_embedded_model(home: Path, work: Path) -> None:
    result = openheim("run", "Say hello.", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    notice = [line for line in result.stderr.splitlines() if "embedded local model" in line]
    assert len(notice) == 1
    assert "SmolLM2-135M-Instruct" in notice[0] and "OPENAI_API_KEY" in notice[0]


def test_without_the_local_extra_the_error_says_what_to_install(home: Path, work: Path) -> None:
    import subprocess

    code = (
        "import sys; sys.modules['llama_cpp'] = None\n"
        "from openheim.cli.main import main\n"
        "sys.exit(main(['run', 'hi']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=env_for(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "pip install 'openheim[local]'" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr


def test_models_list_shows_providers_and_local_files(home: Path, work: Path) -> None:
    (home / "models").mkdir()
    (home / "models" / "mine-Q8_0.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    result = openheim("models", "list", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "openai [openai]" in result.stdout and "local [llama_cpp]" in result.stdout
    assert "SmolLM2-135M-Instruct" in result.stdout and "Q4_1" in result.stdout
    assert "mine" in result.stdout and "Q8_0" in result.stdout


def test_models_add_copies_with_a_checksum(home: Path, work: Path, tmp_path: Path) -> None:
    source = tmp_path / "tiny-F16.gguf"
    source.write_bytes(b"GGUF" + bytes(range(256)) * 100)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    result = openheim("models", "add", str(source), "--sha256", digest, home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert (home / "models" / "tiny-F16.gguf").read_bytes() == source.read_bytes()
    assert digest in result.stdout and "100%" in result.stderr
    again = openheim("models", "add", str(source), home=home, cwd=work)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_models_add_refuses_a_bad_checksum(home: Path, work: Path, tmp_path: Path) -> None:
    source = tmp_path / "x-Q4_0.gguf"
    source.write_bytes(b"GGUF data")
    result = openheim("models", "add", str(source), "--sha256", "0" * 64, home=home, cwd=work)
    assert result.returncode == 2 and "checksum mismatch" in result.stderr
    assert list((home / "models").iterdir()) == []  # nothing half-written left behind


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Silent."""


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[str]:
    served = tmp_path / "served"
    served.mkdir()
    (served / "remote-Q5_K_M.gguf").write_bytes(b"GGUF" + b"x" * 300_000)
    handler = partial(_QuietHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_models_add_downloads(home: Path, work: Path, file_server: str) -> None:
    result = openheim("models", "add", f"{file_server}/remote-Q5_K_M.gguf", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert (home / "models" / "remote-Q5_K_M.gguf").stat().st_size == 300_004
    missing = openheim("models", "add", f"{file_server}/nope.gguf", home=home, cwd=work)
    assert missing.returncode == 2 and "HTTP 404" in missing.stderr
