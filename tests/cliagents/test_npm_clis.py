"""How the tests install the real coding-agent CLIs (tests/cliagents/npm_clis.py): a package's
own install steps run, a program that does not start after the install fails it with its
output, and a cache an older install marked done (without install steps) is installed again.

The full install of the pinned CLIs from an empty cache is what ``.ci/run`` does on every run
(a fresh ``OPENHEIM_CLI_CACHE``), through the tests that use them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cliagents import npm_clis

# Each step appends its own name to steps.txt, so the file shows which ran, in which order.
STEP = "node -e \"require('fs').appendFileSync('steps.txt', process.env.npm_lifecycle_event+',')\""


def npm() -> str:
    found = shutil.which("npm")
    assert found is not None, "npm is needed: scripts/system-deps installs it"
    return found


def package(tmp_path: Path, scripts: dict[str, str]) -> Path:
    folder = tmp_path / "node_modules" / "demo-cli"
    folder.mkdir(parents=True)
    manifest = {"name": "demo-cli", "version": "1.0.0", "scripts": scripts}
    (folder / "package.json").write_text(json.dumps(manifest))
    return folder


def program(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "bin" / "demo"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    return path


def test_a_packages_install_steps_run_in_npms_order(tmp_path: Path) -> None:
    scripts = {"postinstall": STEP, "prepare": STEP, "preinstall": STEP, "install": STEP}
    folder = package(tmp_path, scripts)
    npm_clis.run_install_steps(npm(), folder)
    assert (folder / "steps.txt").read_text() == "preinstall,install,postinstall,"


def test_a_failing_install_step_fails_the_install_with_its_output(tmp_path: Path) -> None:
    folder = package(tmp_path, {"postinstall": "echo 'no binary for this platform' >&2; exit 3"})
    with pytest.raises(npm_clis.CliInstallError) as caught:
        npm_clis.run_install_steps(npm(), folder)
    assert str(caught.value).startswith("the postinstall step of demo-cli failed (3)")
    assert "no binary for this platform" in str(caught.value)


def test_a_program_that_starts_gives_its_version_line(tmp_path: Path) -> None:
    demo = program(tmp_path, '#!/bin/sh\n[ "$1" = --version ] && echo "demo 1.2.3" && echo more\n')
    assert npm_clis.started(demo, tmp_path) == "demo 1.2.3"


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("#!/bin/sh\necho 'Error: demo native binary not installed.' >&2\nexit 1\n", "exited 1"),
        ("#!/bin/sh\nkill -9 $$\n", "exited -9"),
        (None, "No such file or directory"),
        ("not a program at all\n", "Exec format error"),
    ],
)
def test_a_program_that_does_not_start_fails_the_install_with_the_reason(
    tmp_path: Path, script: str | None, reason: str
) -> None:
    demo = program(tmp_path, script) if script else tmp_path / "bin" / "demo"
    with pytest.raises(npm_clis.CliInstallError) as caught:
        npm_clis.started(demo, tmp_path)
    message = str(caught.value)
    assert message.startswith("demo does not start after the install") and reason in message
    if script and "native binary" in script:
        assert message.endswith("Error: demo native binary not installed.")


@pytest.mark.parametrize(
    ("marker", "recorded"),
    [
        (None, None),
        ('["opencode-ai@1.18.33"]', None),  # an older install's: it ran no install steps
        ("{not json", None),
        ('{"packages": "opencode-ai@1.18.33"}', None),
        ('{"packages": ["opencode-ai@1.18.33"], "versions": {}}', ["opencode-ai@1.18.33"]),
    ],
)
def test_only_a_marker_of_this_install_counts_as_installed(
    tmp_path: Path, marker: str | None, recorded: list[str] | None
) -> None:
    path = tmp_path / "installed.json"
    if marker is not None:
        path.write_text(marker)
    assert npm_clis.installed(path) == recorded
