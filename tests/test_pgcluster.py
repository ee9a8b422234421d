"""The private PostgreSQL cluster of the test run (``tests/pgcluster.py``): it answers on its
socket, and each test gets a database of its own, empty, that other tests never see."""

from __future__ import annotations

import psycopg

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
