"""The sessions of one runtime share one store connection, opened by the first and closed by
the last; a session of another runtime has its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openheim.store.sqlite import SQLiteStore, open_store
from tests.api.conftest import MakeRuntime, Scripted


def _closed(store: object) -> bool:
    assert isinstance(store, SQLiteStore)
    try:
        store._conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


async def test_sessions_of_a_runtime_share_one_store(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    first, second = await runtime.new_session(), await runtime.new_session()
    assert first.store is not None
    assert first.store is second.store
    assert runtime.shared.open_stores == 1
    await first.close()
    assert not _closed(second.store)
    scripted.provider.add("stored")
    await second.prompt("still stored")
    assert second.id is not None
    assert len(second.store.messages(second.id)) == 2
    await second.close()
    assert runtime.shared.open_stores == 0
    assert _closed(second.store)


async def test_a_block_session_closes_its_store_with_it(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    async with runtime.open_session() as session:
        store = session.store
        assert runtime.shared.open_stores == 1
    assert runtime.shared.open_stores == 0
    assert _closed(store)


async def test_runtimes_do_not_share(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    one, other = make_runtime(), make_runtime()
    first, second = await one.new_session(), await other.new_session()
    assert first.store is not second.store
    await first.close()
    assert not _closed(second.store)
    await second.close()


async def test_giving_back_a_store_not_lent_leaves_the_lent_one_open(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    runtime = make_runtime()
    session = await runtime.new_session()
    stranger = open_store(tmp_path)
    runtime.shared.give_back(stranger)
    assert runtime.shared.open_stores == 1
    assert not _closed(stranger)
    assert not _closed(session.store)
    stranger.close()
    await session.close()
