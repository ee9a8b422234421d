"""The real coding-agent CLIs from npm, installed once into a cache outside the repository.

``ensure_clis()`` installs the pinned versions the first time (under a file lock, so parallel
test processes install once) and returns the folder of their programs. ``$OPENHEIM_CLI_CACHE``
moves the cache (CI points it at a fresh empty folder on every run, so the install itself is
tested each time); the default is ``<XDG cache or ~/.cache>/openheim-tests/npm``. A missing npm
or a failed install fails the tests that need the CLIs, with the reason: they are not skipped.

Claude Code and OpenCode put their native program in place in their own install step
(``postinstall``); without it neither starts. Whether ``npm install`` runs install scripts
depends on npm's version and settings (``ignore-scripts``, newer npm's ``allowScripts``
approvals), so the install runs with them off and then runs the install steps of the pinned
packages, and only theirs, with ``npm run``. Each program must then answer ``--version``, or the
install fails with its output; only then is the install marked done.

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
INSTALL_STEPS: Final = ("preinstall", "install", "postinstall")
"""The lifecycle scripts npm runs when it installs a package from the registry, in its order."""
_MARKER: Final = "installed.json"
_NPM_TIMEOUT_S: Final = 300
_STEP_TIMEOUT_S: Final = 60
_OUTPUT_CHARS: Final = 2000
INSTALL_TIMEOUT_S: Final = 480
"""The pytest timeout of a test that may install the CLIs (their programs are ~450 MB)."""


EnvFor = Callable[[Path, FakeLLMServer, Path], dict[str, str]]
"""Builds a CLI's environment: its private home, the server it talks to, the programs' folder."""


class CliInstallError(RuntimeError):
    """npm is missing, installing the pinned CLIs failed, or an installed CLI does not start."""


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
        if installed(marker) == wanted:
            return bin_dir
        versions = install(root, wanted, {name: bin_dir / name for name in PACKAGES})
        marker.write_text(json.dumps({"packages": wanted, "versions": versions}))
    return bin_dir


def installed(marker: Path) -> list[str] | None:
    """The packages ``marker`` records as installed and started; None when there is no marker,
    it is damaged, or it is the list an older install wrote (that install ran no install steps,
    so its CLIs may not start: they are installed again)."""
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    packages = data.get("packages") if isinstance(data, dict) else None
    return packages if isinstance(packages, list) else None


def install(root: Path, packages: list[str], programs: dict[str, Path]) -> dict[str, str]:
    """Install ``packages`` afresh into ``root``, run their install steps, and check that each
    of ``programs`` starts; each program's ``--version`` line."""
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError(
            "npm was not found on PATH: the CLI-agent tests install Claude Code, Codex and "
            "OpenCode with npm. Install Node.js 18+ with npm (scripts/system-deps does)."
        )
    for stale in ("node_modules", "package.json", "package-lock.json"):
        path = root / stale
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    argv = [npm, "install", "--prefix", str(root), "--ignore-scripts", "--save-exact", *packages]
    _run(argv, "`npm install`", _NPM_TIMEOUT_S)
    for spec in packages:
        run_install_steps(npm, root / "node_modules" / spec.rpartition("@")[0])
    return {name: started(program, root) for name, program in programs.items()}


def run_install_steps(npm: str, package: Path) -> None:
    """Run the install steps ``package`` declares (its ``preinstall``, ``install`` and
    ``postinstall`` scripts, in npm's order) with ``npm run`` in its folder, each once
    (``--ignore-scripts`` keeps ``npm run install`` from running the other two around it)."""
    scripts = json.loads((package / "package.json").read_text()).get("scripts", {})
    for step in INSTALL_STEPS:
        if step in scripts:
            argv = [npm, "run", "--ignore-scripts", "--prefix", str(package), step]
            _run(argv, f"the {step} step of {package.name}", _STEP_TIMEOUT_S)


def started(program: Path, root: Path) -> str:
    """The first line ``program --version`` prints, run with a private home under ``root``; a
    ``CliInstallError`` with its output when it does not start or fails."""
    home = root / "version-home"
    home.mkdir(exist_ok=True)
    argv = [str(program), "--version"]
    env = {**os.environ, "HOME": str(home), "DISABLE_AUTOUPDATER": "1"}
    try:
        proc = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_STEP_TIMEOUT_S,
            check=False,
        )
    except OSError as err:
        raise CliInstallError(
            f"{program.name} does not start after the install: {program}: {err.strerror or err}"
        ) from None
    except subprocess.TimeoutExpired:
        raise CliInstallError(
            f"`{program.name} --version` did not finish in {_STEP_TIMEOUT_S} s after the install"
        ) from None
    output = f"{proc.stdout}{proc.stderr}".strip()
    if proc.returncode != 0:
        raise CliInstallError(
            f"{program.name} does not start after the install: `{program} --version` exited "
            f"{proc.returncode}:\n{output[-_OUTPUT_CHARS:]}"
        )
    return output.partition("\n")[0]


def _run(argv: list[str], what: str, timeout_s: int) -> None:
    """Run an npm command; a ``CliInstallError`` with its output when it fails or hangs."""
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    try:
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise CliInstallError(f"{what} took over {timeout_s} s: `{' '.join(argv)}`") from None
    if proc.returncode != 0:
        detail = f"{proc.stdout}{proc.stderr}".strip()[-_OUTPUT_CHARS:]
        raise CliInstallError(f"{what} failed ({proc.returncode}): `{' '.join(argv)}`\n{detail}")


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
