"""The gateway's state, one suite over both backends: SQLite in data_dir, and the PostgreSQL
store that ``store_url`` names (shared by replicas)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from openheim.errors import ConfigError, SchemaError, StoreError
from openheim.gateway.inbound import Inbound
from openheim.gateway.state import Conversation, GatewayState, open_state

Opener = Callable[[], GatewayState]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens the gateway's state of one backend, as many times as a test asks (as replicas or
    restarts would); every opened one is closed after the test."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    opened: list[GatewayState] = []

    def open_one() -> GatewayState:
        opened.append(open_state(tmp_path / "data", url))
        return opened[-1]

    yield open_one
    for state in opened:
        state.close()


def _message(n: int, platform: str = "telegram") -> Inbound:
    return Inbound(platform, f"9:{n}", "111", "9", f"words {n}", reply_to=str(n))


def test_a_message_is_stored_once_and_kept_until_handled(opener: Opener) -> None:
    state, replica = opener(), opener()
    first, second = _message(1), _message(2)
    assert state.receive(first) and state.receive(second)
    assert not replica.receive(first)  # the same id through another replica: a duplicate
    assert replica.unhandled("telegram") == [first, second]  # in arrival order
    assert replica.unhandled("discord") == []
    state.handled(first)
    assert replica.unhandled("telegram") == [second]
    assert not opener().receive(first)  # still a duplicate once handled, after a restart


def test_grants_are_given_listed_and_revoked(opener: Opener) -> None:
    state = opener()
    state.grant("telegram", "222")
    state.grant("telegram", "222")  # again: still one grant
    assert opener().granted("telegram", "222") and not state.granted("discord", "222")
    assert [(p, s) for p, s, _ in state.grants()] == [("telegram", "222")]
    assert state.revoke("telegram", "222") and not state.revoke("telegram", "222")
    assert not state.granted("telegram", "222")


def test_rate_counts_restart_in_each_window(opener: Opener) -> None:
    state, replica = opener(), opener()
    assert [state.count("telegram", "1", 60.0), replica.count("telegram", "1", 60.0)] == [1, 2]
    assert state.count("telegram", "2", 60.0) == 1  # per sender
    assert replica.count("telegram", "1", 120.0) == 1  # a new window


def test_conversations_and_cursors_are_kept(opener: Opener) -> None:
    state = opener()
    assert state.conversation("k") == Conversation("k")
    state.save(Conversation("k", "s1", None))
    state.save(Conversation("k", "s1", "fake-large"))
    assert opener().conversation("k") == Conversation("k", "s1", "fake-large")
    assert state.cursor("telegram.offset") is None
    state.set_cursor("telegram.offset", "41")
    state.set_cursor("telegram.offset", "42")
    assert opener().cursor("telegram.offset") == "42"


def test_one_holder_leads_until_its_lease_expires_or_it_resigns(opener: Opener) -> None:
    state, replica = opener(), opener()
    assert state.lead("telegram", "a", 30.0)
    assert not replica.lead("telegram", "b", 30.0)  # held by a
    assert replica.lead("discord", "b", 30.0)  # per platform
    assert state.lead("telegram", "a", 30.0)  # renewed by its holder
    state.resign("telegram", "b")  # not b's to give up
    assert not replica.lead("telegram", "b", 30.0)
    state.resign("telegram", "a")
    assert replica.lead("telegram", "b", -1.0)  # taken at once, and already expired:
    assert state.lead("telegram", "a", 30.0)  # so a takes it back
    assert replica.leader("telegram") == "a" and replica.leader("whatsapp") is None


def test_a_lease_is_taken_over_only_from_the_holder_named(opener: Opener) -> None:
    state, replica = opener(), opener()
    assert state.lead("telegram", "dead", 30.0)
    assert not replica.take_over("telegram", "someone else", "b", 30.0)
    assert replica.take_over("telegram", "dead", "b", 30.0)
    assert not state.lead("telegram", "dead", 30.0) and replica.lead("telegram", "b", 30.0)


def test_a_dropped_connection_is_retried_in_one_logged_line(
    pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = open_state(tmp_path, pg_url)
    try:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with caplog.at_level(logging.WARNING):
            assert state.receive(_message(1))
        assert state.unhandled("telegram") == [_message(1)]
        warnings = [r.getMessage() for r in caplog.records if r.name.startswith("openheim")]
        assert len(warnings) == 1 and "trying again in 0.5 s" in warnings[0]
    finally:
        state.close()


def test_a_server_gone_for_good_fails_in_one_line_after_bounded_tries(
    pg_url: str, tmp_path: Path
) -> None:
    from openheim.gateway.pg_state import RETRIES, PgGatewayState

    waits: list[float] = []
    state = PgGatewayState(pg_url, sleep=waits.append)
    state.close()
    state.url = pg_url.replace("host=", "host=/nonexistent")  # a server that no longer answers
    with pytest.raises(StoreError) as raised:
        state.receive(_message(1))
    assert waits == [0.5 * 2**n for n in range(RETRIES)]
    assert "\n" not in str(raised.value) and "failed" in str(raised.value)
    state.url = pg_url  # back: the gateway stops on the outage, so later calls fail at once
    with pytest.raises(StoreError) as again:
        state.granted("telegram", "1")
    assert again.value is raised.value and len(waits) == RETRIES


def _newer_extra_schema(url: str) -> None:
    open_state(Path("/nonexistent"), url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO openheim_extra_schema VALUES (99, 0)")


def _foreign_table(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")


def _contents(url: str) -> list[tuple[str, int]]:
    """Every table of the database and its row count."""
    with psycopg.connect(url) as conn:
        names = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        tables = sorted(str(row[0]) for row in names)
        return [(t, int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])) for t in tables]  # type: ignore[index]


@pytest.mark.parametrize(
    ("spoil", "url_of", "error"),
    [
        (None, lambda url: "mysql://user@host/db", "store_url is not a postgresql:// URL"),
        (None, lambda url: "postgresql://host:notaport/db", "is not a valid PostgreSQL URL"),
        (None, lambda url: url.replace("host=", "host=/nonexistent"), "failed:"),
        (_foreign_table, lambda url: url, "holds 1 tables of another application"),
        (_newer_extra_schema, lambda url: url, "have schema version 99, newer than"),
    ],
)
def test_a_database_it_cannot_use_is_one_line_and_nothing_written(
    pg_url: str,
    tmp_path: Path,
    spoil: Callable[[str], None] | None,
    url_of: Callable[[str], str],
    error: str,
) -> None:
    if spoil is not None:
        spoil(pg_url)
    before = _contents(pg_url)
    with pytest.raises((ConfigError, StoreError, SchemaError)) as raised:
        open_state(tmp_path, url_of(pg_url))
    assert error in str(raised.value) and "\n" not in str(raised.value)
    assert _contents(pg_url) == before
    assert not (tmp_path / "gateway.db").exists()
