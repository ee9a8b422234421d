"""Shared set-up of the chat tests: a config pointing at a FakeLLMServer, and the
environment of an ``openheim`` child process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openheim.testing import FakeLLMServer


def configure(home: Path, server: FakeLLMServer, *, extra: str = "") -> None:
    """``config.toml`` with one provider ``fake`` on ``server``, and a ``system.md``."""
    (home / "config.toml").write_text(
        f'default_provider = "fake"\n{extra}\n[providers.fake]\napi_base = "{server.base_url}"\n'
        'default_model = "fake-model"\nmodels = ["fake-model", "fake-large"]\n'
    )
    (home / "system.md").write_text("You are a test agent.\n")


def child_env(home: Path) -> dict[str, str]:
    """This process's environment without keys or openheim settings, with ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env = {k: v for k, v in env.items() if not k.startswith("OPENHEIM_")}
    return {**env, "OPENHEIM_HOME": str(home)}


def run_openheim(
    home: Path, work: Path, *args: str, typed: str = "", python: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``python [python...] -m openheim ARGS`` in ``work`` with ``typed`` on a piped stdin and
    no controlling terminal (approvals are headless)."""
    return subprocess.run(
        [sys.executable, *python, "-m", "openheim", *args],
        input=typed,
        cwd=work,
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
