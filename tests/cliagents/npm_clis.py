"""The real coding-agent CLIs from npm, installed once into a cache outside the repository.

``ensure_clis()`` runs ``npm install --prefix CACHE --ignore-scripts`` for the pinned versions
the first time (under a file lock, so parallel test processes install once) and returns the
folder of their programs. ``$OPENHEIM_CLI_CACHE`` moves the cache (to share or pre-fill it);
the default is ``<XDG cache or ~/.cache>/openheim-tests/npm``. A missing npm or a failed install
fails the tests that need the CLIs, with the reason: they are not skipped.

Each CLI is then pointed at ``FakeLLMServer`` through its own settings in a private home:
Claude Code through ``ANTHROPIC_BASE_URL``, Codex through a model provider in
``$CODEX_HOME/config.toml`` (the Responses API), OpenCode through an OpenAI-compatible provider
in ``$XDG_CONFIG_HOME/opencode/opencode.json``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Final

from openheim.testing import FakeLLMServer

PACKAGES: Final = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.171.0",
    "opencode": "opencode-ai@1.18.33",
}
CACHE_ENV: Final = "OPENHEIM_CLI_CACHE"
_MARKER: Final = "installed.json"
_NPM_TIMEOUT_S: Final = 400
INSTALL_TIMEOUT_S: Final = 480
"""The pytest timeout of a test that may install the CLIs (their programs are ~450 MB)."""


EnvFor = Callable[[Path, FakeLLMServer, Path], dict[str, str]]
"""Builds a CLI's environment: its private home, the server it talks to, the programs' folder."""


class CliInstallError(RuntimeError):
    """npm is missing, or installing the pinned CLIs failed."""


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "openheim-tests" / "npm"


def ensure_clis() -> Path:
    """The ``node_modules/.bin`` folder holding ``claude``, ``codex`` and ``opencode``."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    bin_dir = root / "node_modules" / ".bin"
    wanted = sorted(PACKAGES.values())
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / _MARKER
        if marker.is_file() and json.loads(marker.read_text()) == wanted:
            return bin_dir
        _npm_install(root, wanted)
        marker.write_text(json.dumps(wanted))
    return bin_dir


def _npm_install(root: Path, packages: list[str]) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError(
            "npm was not found on PATH: the CLI-agent tests install Claude Code, Codex and "
            "OpenCode with npm. Install Node.js 18+ with npm (apt-get install nodejs npm)."
        )
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    argv = [npm, "install", "--prefix", str(root), "--ignore-scripts", "--save-exact", *packages]
    try:
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=_NPM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise CliInstallError(f"`npm install` took over {_NPM_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[-2000:]
        raise CliInstallError(f"`{' '.join(argv)}` failed ({proc.returncode}):\n{detail}")


def claude_env(home: Path, server: FakeLLMServer, bin_dir: Path) -> dict[str, str]:
    """Claude Code in a private home, talking to ``server`` with a fake key."""
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}",
        "ANTHROPIC_API_KEY": "sk-ant-test-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CC_ADAPTER_CLAUDE_BIN": str(bin_dir / "claude"),
    }


def codex_env(home: Path, server: FakeLLMServer, bin_dir: Path) -> dict[str, str]:
    """Codex with a ``CODEX_HOME`` whose model provider is ``server`` (Responses API)."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{server.base_url}"\nenv_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    return {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-test-fake",
        "CODEX_ADAPTER_BIN": str(bin_dir / "codex"),
    }


def opencode_env(home: Path, server: FakeLLMServer, bin_dir: Path) -> dict[str, str]:
    """OpenCode whose user config (under ``XDG_CONFIG_HOME``) has ``server`` as provider."""
    config = home / "config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": server.base_url, "apiKey": "fake"},
        "models": {"fake-model": {"name": "Fake"}},
    }
    (config / "opencode.json").write_text(
        json.dumps({"provider": {"fake": provider}, "model": "fake/fake-model"})
    )
    return {
        "HOME": str(home),
        **{f"XDG_{n}_HOME": str(home / n.lower()) for n in ("CONFIG", "DATA", "CACHE", "STATE")},
        "OPENCODE_ADAPTER_BIN": str(bin_dir / "opencode"),
    }
