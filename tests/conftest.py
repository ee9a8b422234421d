from __future__ import annotations

from pathlib import Path

import pytest

from openheim.process.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.sandbox import PathSandbox

SETTINGS_ENV = (
    "OPENHEIM_PROVIDER",
    "OPENHEIM_MODEL",
    "OPENHEIM_WORK_DIR",
    "OPENHEIM_MAX_ITERATIONS",
    "OPENHEIM_ALLOW_SHELL",
    "OPENHEIM_APPROVAL",
)
"""The variables that change openheim's settings, besides ``OPENHEIM_HOME``."""


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test runs with an empty ``OPENHEIM_HOME`` of its own and no ``OPENHEIM_*``
    setting from the outside: a runtime built without a home in mind never reads the real
    ``~/.openheim`` (its config, its sessions) nor writes there. A test that needs a home
    sets its own over this one."""
    home = tmp_path_factory.mktemp("openheim-home")
    monkeypatch.setenv("OPENHEIM_HOME", str(home))
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    """A tool context confined to a fresh temporary work dir."""
    return ToolContext(PathSandbox(tmp_path), tmp_path.resolve(), child_env())


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty ``OPENHEIM_HOME`` for one test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty work dir for one test."""
    path = tmp_path / "work"
    path.mkdir()
    return path
