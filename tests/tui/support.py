"""Shared set-up of the chat tests: a config pointing at a FakeLLMServer, and the
environment of an ``openheim`` child process."""

from __future__ import annotations

import os
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
