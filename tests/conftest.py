from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from openheim.process.child_env import child_env
from openheim.tools.base import ToolContext
from openheim.tools.sandbox import PathSandbox

if TYPE_CHECKING:
    from tests.pgcluster import Cluster

SETTINGS_ENV = (
    "OPENHEIM_PROVIDER",
    "OPENHEIM_MODEL",
    "OPENHEIM_WORK_DIR",
    "OPENHEIM_MAX_ITERATIONS",
    "OPENHEIM_ALLOW_SHELL",
    "OPENHEIM_APPROVAL",
    "OPENHEIM_STORE_URL",
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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A private PostgreSQL cluster for the whole run (see ``tests/pgcluster.py``), started on
    first use and stopped at the end."""
    from tests.pgcluster import Cluster

    cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """The URL of a fresh, empty database of the test cluster, dropped after the test."""
    url = pg_cluster.database()
    try:
        yield url
    finally:
        pg_cluster.drop(url)
