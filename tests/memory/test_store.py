"""MemoryStore with keyword search: BM25 order, edit, forget, persistence and odd queries."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from openheim.errors import ConfigError
from openheim.memory import MemoryStore
from openheim.memory.db import fts_query


async def test_remember_then_search_ranks_by_bm25(store: MemoryStore) -> None:
    weak = await store.remember(
        "the deploy script mentions python once among many other words about servers and builds"
    )
    strong = await store.remember("python python: use python 3.11 for this project")
    await store.remember("rust is used for the parser")
    result = await store.search("python", 5)
    assert result.semantic is False and result.note is None
    assert [h.memory.id for h in result.hits] == [strong.memory.id, weak.memory.id]
    assert result.hits[0].score > result.hits[1].score > 0


async def test_any_word_matches_and_more_matching_words_rank_higher(store: MemoryStore) -> None:
    only_tea = await store.remember("green tea in the morning")
    both = await store.remember("the user likes tea with honey")
    only_honey = await store.remember("honey is kept in the pantry")
    hits = (await store.search("tea honey", 5)).hits
    assert hits[0].memory.id == both.memory.id
    assert {h.memory.id for h in hits} == {only_tea.memory.id, both.memory.id, only_honey.memory.id}


async def test_stemming_finds_other_word_forms(store: MemoryStore) -> None:
    saved = await store.remember("the user prefers running tests with pytest")
    assert [h.memory.id for h in (await store.search("run test", 5)).hits] == [saved.memory.id]


async def test_tags_are_stored_and_searchable(store: MemoryStore) -> None:
    saved = await store.remember("dark mode everywhere", ["preference", "ui"])
    assert saved.memory.tags == ("preference", "ui")
    [hit] = (await store.search("preference", 5)).hits
    assert hit.memory.id == saved.memory.id
    assert hit.memory.tags == ("preference", "ui")


async def test_limit_caps_the_hits(store: MemoryStore) -> None:
    for n in range(5):
        await store.remember(f"note number {n} about cats")
    assert len((await store.search("cats", 3)).hits) == 3


async def test_edit_replaces_the_text_and_the_index(store: MemoryStore) -> None:
    saved = await store.remember("the office is in Berlin")
    edited = await store.edit(saved.memory.id, "the office moved to Lisbon")
    assert edited is not None
    assert edited.memory.text == "the office moved to Lisbon"
    assert edited.memory.created == saved.memory.created
    assert (await store.search("Berlin", 5)).hits == []
    assert [h.memory.id for h in (await store.search("Lisbon", 5)).hits] == [saved.memory.id]
    assert await store.edit(999, "nothing") is None


async def test_forget_removes_it_and_ids_are_never_reused(store: MemoryStore) -> None:
    await store.remember("first fact")
    last = await store.remember("second fact")
    forgotten = await store.forget(last.memory.id)
    assert forgotten is not None and forgotten.text == "second fact"
    assert await store.get(last.memory.id) is None
    assert [h.memory.text for h in (await store.search("fact", 5)).hits] == ["first fact"]
    assert await store.forget(last.memory.id) is None
    again = await store.remember("third fact")
    assert again.memory.id > last.memory.id


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "a OR",
        "AND",
        "NOT x",
        "NEAR(a b)",
        "col:value",
        "pre*",
        "^start",
        "(-)",
        "'; DROP TABLE memories; --",
        "text:secret tags:x",
        '""',
        "{tags}: x",
    ],
)
async def test_fts_syntax_in_queries_is_treated_as_words(store: MemoryStore, query: str) -> None:
    saved = await store.remember("value start secret NOT AND tags text pre")
    result = await store.search(query, 5)
    assert all(h.memory.id == saved.memory.id for h in result.hits)
    assert await store.get(saved.memory.id) is not None


async def test_a_query_without_words_finds_nothing(store: MemoryStore) -> None:
    await store.remember("something")
    assert (await store.search("?!* -- ()", 5)).hits == []


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('say "hi" OR bye') == '"say" OR "hi" OR "OR" OR "bye"'
    assert fts_query("...") is None


async def test_memories_persist_and_the_file_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "memory.db"
    with MemoryStore(path) as first:
        saved = await first.remember("persistent fact")
    with MemoryStore(path) as second:
        again = await second.get(saved.memory.id)
        assert again is not None and again.text == "persistent fact"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_the_file_is_created_on_first_use_only(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "memory.db"
    with MemoryStore(path) as store:
        assert not path.exists()
        assert (await store.search("anything", 5)).hits == []
        assert path.is_file()


async def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with MemoryStore(path) as store, pytest.raises(ConfigError) as caught:
        await store.remember("x")
    assert "cannot open the memory database" in caught.value.message
    assert caught.value.hint is not None and "db_path" in caught.value.hint


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA user_version=99")
    with MemoryStore(path) as store, pytest.raises(ConfigError, match="schema version 99"):
        await store.get(1)


async def test_recent_lists_newest_first_and_honours_the_limit(store: MemoryStore) -> None:
    assert await store.recent(5) == []
    await store.remember("first note")
    second = await store.remember("second note")
    third = await store.remember("third note")
    assert [m.id for m in await store.recent(2)] == [third.memory.id, second.memory.id]
