"""The private PostgreSQL cluster of the test run (``tests/pgcluster.py``): it answers on its
socket, and each test gets a database of its own, empty, that other tests never see."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests import pgcluster
from tests.pgcluster import Cluster


def test_each_test_gets_an_empty_database_of_its_own(pg_cluster: Cluster, pg_url: str) -> None:
    other = pg_cluster.database()
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE mine (x int)")
        with psycopg.connect(other, autocommit=True) as conn:
            found = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert found == (0,)
    finally:
        pg_cluster.drop(other)


def test_the_cluster_listens_on_its_socket_only(pg_cluster: Cluster) -> None:
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        row = conn.execute("SHOW listen_addresses").fetchone()
    assert row == ("",)
    assert str(pg_cluster.folder) in pg_cluster.url()


def test_a_cluster_that_fails_after_starting_leaves_no_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recorded(prefix: str) -> str:
        made.append(real_mkdtemp(prefix=prefix))
        return made[-1]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("planted failure after pg_ctl start")

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    monkeypatch.setattr(psycopg, "connect", broken)
    with pytest.raises(RuntimeError, match="planted failure"):
        pgcluster.Cluster()
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert made and made[0] not in processes.stdout
    assert not Path(made[0]).exists()
