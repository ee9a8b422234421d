"""What only the PostgreSQL store has: migrations run once however many processes open a fresh
database together, and bad input (a wrong URL, an unreachable server, a database of another
application, a newer schema) refused in one line that never shows the password, before anything
is written. The contract shared with SQLite runs on both backends in the other files."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg_pool.base import AttemptWithBackoff

from openheim.errors import ConfigError, SchemaError, SessionBusy, StoreError
from openheim.messages import Message
from openheim.store.opener import open_store
from openheim.store.pg_link import RECONNECT_MAX, checked, redacted
from openheim.store.pg_schema import MIGRATIONS, WRITE_KEY
from openheim.store.postgres import PostgresStore
from tests.pgcluster import Cluster

from .support import Child

SECRET = "s3cret-pw"


def tables_of(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
    return [row[0] for row in rows]


def test_stores_opening_a_fresh_database_together_migrate_it_once(pg_url: str) -> None:
    start = threading.Barrier(4, timeout=30)

    def open_one(_: int) -> PostgresStore:
        start.wait()
        return PostgresStore(pg_url)

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(open_one, range(4)))
    try:
        sid = stores[0].create(cwd="/", provider="p", model="m").id
        stores[3].append(sid, Message.user("hello from another replica"))
        assert [m.text for m in stores[1].messages(sid)] == ["hello from another replica"]
    finally:
        for store in stores:
            store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        versions = conn.execute("SELECT version FROM openheim_schema ORDER BY version").fetchall()
    assert versions == [(n + 1,) for n in range(len(MIGRATIONS))]


def test_frames_are_stored_while_another_write_holds_the_write_lock(pg_url: str) -> None:
    """The frame log takes no store-wide write lock: the streaming of every replica's prompts
    never queues behind another replica's message writes (a message still does)."""
    with PostgresStore(pg_url) as store, ThreadPoolExecutor(2) as pool:
        sid = store.create(cwd="/", provider="p", model="m").id
        with psycopg.connect(pg_url, autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(%s)", (WRITE_KEY,))
            message = pool.submit(store.append, sid, Message.user("waits"))
            pool.submit(store.frames.append, [(sid, 1, "streamed")]).result(timeout=10)
            assert list(store.frames.after(sid, 0)) == [(1, "streamed")]
            assert not message.done()
            other.execute("SELECT pg_advisory_unlock(%s)", (WRITE_KEY,))
        message.result(timeout=10)
        assert [m.text for m in store.messages(sid)] == ["waits"]


def test_connections_the_server_cut_are_replaced_with_no_wait(pg_url: str) -> None:
    """After a restart every pooled connection is dead: the next read drops them all and goes
    on at once, not after psycopg_pool's back-off of a second and more per dead one."""
    with PostgresStore(pg_url) as store:
        sid = store.create(cwd="/", provider="p", model="m").id
        store.append(sid, Message.user("kept"))
        pool = store._pool
        with pool.connection(), pool.connection(), pool.connection():
            pass  # three connections idle in the pool
        with psycopg.connect(pg_url, autocommit=True) as admin:
            others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> %s"
            me = (admin.info.backend_pid,)
            cut = admin.execute(f"SELECT pg_terminate_backend(pid) {others}", me).fetchall()
            assert len(cut) >= 3
            for _ in range(200):  # until their ends have reached the store's sockets
                if not admin.execute(f"SELECT 1 {others}", me).fetchall():
                    break
        began = time.monotonic()
        assert [m.text for m in store.messages(sid)] == ["kept"]
        assert time.monotonic() - began < AttemptWithBackoff.INITIAL_DELAY


OUTAGE = 3.0
"""Seconds the server is away: psycopg_pool's own waits between tries (1 s, 2 s, 4 s) would
put its next try 4 s after the outage began."""


def test_the_store_answers_within_a_second_of_the_servers_return(
    pg_url: str, pg_cluster: Cluster
) -> None:
    with PostgresStore(pg_url) as store:
        sid = store.create(cwd="/", provider="p", model="m").id
        with pg_cluster.down():
            store._pool.check()  # finds its connection cut: tries to open others meanwhile
            time.sleep(OUTAGE)
        back = time.monotonic()
        assert store.messages(sid) == []
        assert time.monotonic() - back < RECONNECT_MAX + 1.0


def test_reopening_a_migrated_database_keeps_its_sessions(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        sid = store.create(cwd="/w", provider="p", model="m").id
        store.append(sid, Message.user("kept"))
    with PostgresStore(pg_url) as store:
        assert [m.text for m in store.messages(sid)] == ["kept"]


def test_a_database_of_another_application_is_refused_untouched(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int)")
    with pytest.raises(ConfigError) as caught:
        PostgresStore(pg_url)
    assert "holds 1 tables of another application" in str(caught.value)
    assert "database of its own" in (caught.value.hint or "")
    assert tables_of(pg_url) == ["customers"]


def test_a_schema_newer_than_this_openheim_is_refused_untouched(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    newer = len(MIGRATIONS) + 1
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO openheim_schema VALUES (%s, 0)", (newer,))
    before = tables_of(pg_url)
    with pytest.raises(SchemaError) as caught:
        PostgresStore(pg_url)
    assert f"schema version {newer}, newer than this openheim knows" in str(caught.value)
    assert tables_of(pg_url) == before


@pytest.mark.parametrize(
    "url",
    [
        f"mysql://me:{SECRET}@db.internal/openheim",
        f"me:{SECRET}@db.internal/openheim",
        f"host=db.internal password={SECRET}",
        f"postgresql://me:{SECRET}@db.internal:notaport/openheim",
        f"postgresql://me@db.internal/openheim?password={SECRET}&unknown=option",
        "",
        f"postgresql://me:{SECRET}@db.internal/openheim?port=notaport",
        f"postgresql://me:{SECRET}@db.internal/openheim?port=70000",
        f"postgresql://me:{SECRET}@a,b/openheim?port=5432,x",
        f"postgresql://me:{SECRET}@db.internal/openheim?connect_timeout=soon",
        f"postgresql://me:{SECRET}@db.internal/openheim?keepalives_idle=-4",
    ],
    ids=[
        "other-scheme", "no-scheme", "keyword-string", "bad-port", "bad-option", "empty",
        "query-port-letters", "query-port-range", "query-port-list", "timeout-letters",
        "keepalive-negative",
    ],
)  # fmt: skip
def test_a_wrong_url_is_refused_in_one_line_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        PostgresStore(url)
    text = f"{caught.value}\n{caught.value.hint}"
    assert SECRET not in text
    assert "\n" not in str(caught.value)
    assert "store_url" in str(caught.value)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("port=notaport", "port is not a number from 1 to 65535"),
        ("port=0", "port is not a number from 1 to 65535"),
        ("port=5432,x", "port is not a number from 1 to 65535"),
        ("connect_timeout=soon", "connect_timeout is not a whole number of 0 or more"),
        ("keepalives_count=1.5", "keepalives_count is not a whole number of 0 or more"),
    ],
)
def test_a_number_option_that_is_not_a_number_is_named(query: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        checked(f"postgresql://me:{SECRET}@h/db?{query}")
    assert says in str(caught.value)
    assert "postgresql://me:***@h/db" in str(caught.value)


@pytest.mark.parametrize(
    "query", ["port=5432", "port=5432,5433", "port=,5433", "connect_timeout=0", "sslmode=require"]
)
def test_good_number_options_are_taken(query: str) -> None:
    url = f"postgresql://me@a,b/db?{query}"
    assert checked(url) == url


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore(f"postgresql://me:{SECRET}@127.0.0.1:1/openheim?connect_timeout=5")
    message = str(caught.value)
    assert SECRET not in message and "\n" not in message
    assert message.startswith("the session database at postgresql://me:***@127.0.0.1:1/")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://me:pw@h:5432/db", "postgresql://me:***@h:5432/db"),
        ("postgresql://me@h/db", "postgresql://me@h/db"),
        ("postgresql://me:p%40ss@h/db?sslmode=require", "postgresql://me:***@h/db?sslmode=require"),
        ("postgresql:///db?host=/run/pg&password=pw", "postgresql:///db?host=/run/pg&password=***"),
        ("postgresql://me:pw:more@h/db", "postgresql://me:***@h/db"),
    ],
)
def test_urls_are_shown_without_their_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


def test_a_lease_held_by_another_process_is_busy_until_that_process_dies(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        sid = store.create(cwd="/", provider="p", model="m").id
        child = Child(
            pg_url,
            f"""
            from openheim.store.postgres import PostgresStore
            store = PostgresStore(db)
            lease = store.acquire({sid!r})
            signal("held")
            sys.stdin.read()
            """,
        )
        try:
            child.expect("held")
            with pytest.raises(SessionBusy) as caught:
                store.acquire(sid)
            assert f"process {child.pid}" in str(caught.value)
        finally:
            child.kill()
        with store.acquire(sid) as lease:  # its holder is gone: taken over
            lease.refresh()


def test_writers_in_several_stores_never_interleave(pg_url: str) -> None:
    """Four stores (four replicas' pools) append to one session and create sessions at once:
    message numbers stay contiguous and every ``updated_at`` stays unique."""
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        sid = stores[0].create(cwd="/", provider="p", model="m").id

        def write(n: int) -> None:
            for i in range(10):
                stores[n].append(sid, Message.user(f"writer {n} message {i}"))
                stores[n].create(cwd="/", provider="p", model="m")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(write, range(4)))
        texts = [m.text for m in stores[1].messages(sid)]
        assert len(texts) == 40 == stores[2].get(sid).message_count
        for n in range(4):
            assert [t for t in texts if t.startswith(f"writer {n} ")] == [
                f"writer {n} message {i}" for i in range(10)
            ]
        stamps = [record.updated_at for record in stores[3].list(limit=100)]
        assert len(stamps) == 41 == len(set(stamps))
    finally:
        for store in stores:
            store.close()


def test_without_psycopg_a_store_url_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """openheim installed without the ``postgres`` extra: ``store_url`` says what to install;
    without a ``store_url`` SQLite needs nothing of it."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail
    for module in ("openheim.store.postgres", "openheim.store.pg_link"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ConfigError) as caught:
        open_store(tmp_path, f"postgresql://me:{SECRET}@127.0.0.1/db")
    assert "needs PostgreSQL support, which is not installed (psycopg is missing)" in str(
        caught.value
    )
    assert "openheim[postgres]" in (caught.value.hint or "")
    with open_store(tmp_path, None) as store:
        assert store.list() == []


def test_a_login_without_the_rights_it_needs_is_one_line_untouched(
    pg_url: str, pg_cluster: Cluster
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN")
    try:
        reader = pg_url.replace("postgresql://openheim@", "postgresql://reader@")
        with pytest.raises(StoreError) as caught:
            PostgresStore(reader)
        assert "permission denied" in str(caught.value) and "\n" not in str(caught.value)
        assert tables_of(pg_url) == []
    finally:
        pg_cluster.drop(pg_url)  # the role owns nothing once its database is gone
        with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
            conn.execute("DROP ROLE reader")
