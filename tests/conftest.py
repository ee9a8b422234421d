from __future__ import annotations

from pathlib import Path

import pytest

from openheim.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.sandbox import PathSandbox


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
