"""End to end: secrets through ``openheim run`` against FakeLLMServer on loopback.

Each test reproduces an attack: a secret file attached with ``@``, a key streamed in pieces,
a shell command reading openheim's environment or a ``.env`` password.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer
from tests.test_cli import configure, openheim


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("name", "pattern"), [(".env", ".env*"), (".env.local", ".env*"), ("deploy.pem", "*.pem")]
)
def test_a_secret_file_is_not_attached(home: Path, work: Path, name: str, pattern: str) -> None:
    (work / name).write_text("DB_PASSWORD=correct-horse-battery\n")
    (work / "innocent.txt").symlink_to(work / name)
    with FakeLLMServer([]) as server:
        configure(home, server)
        for shown in (name, "innocent.txt"):
            result = openheim("run", "summarise", f"@{shown}", home=home, cwd=work)
            assert result.returncode == 2, result.stderr
            assert f"refused to attach @{shown}: it matches the secret pattern {pattern!r}" in (
                result.stderr
            )
            assert "deny_read" in result.stderr and "Traceback" not in result.stderr
    assert server.requests == [] and "correct-horse" not in result.stderr


def test_deny_read_in_config_decides_what_may_be_attached(home: Path, work: Path) -> None:
    (work / ".env").write_text("PLAIN=shown\n")
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        (home / "config.toml").write_text(
            'deny_read = ["*.pem"]\n' + (home / "config.toml").read_text()
        )
        result = openheim("run", "summarise", "@.env", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "PLAIN=shown" in str(server.requests[0].messages[-1]["content"])
