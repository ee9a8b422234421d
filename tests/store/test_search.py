"""Full-text search over message text: words match literally, FTS syntax in input is text."""

from __future__ import annotations

import pytest

from openheim.messages import Message
from openheim.store.common import SqlStore
from openheim.store.tables import fts_query

from .support import call, result


def session(store: SqlStore, *texts: str, title: str = "") -> str:
    sid = store.create(cwd="/", provider="p", model="m", title=title).id
    for text in texts:
        store.append(sid, Message.user(text))
    return sid


def test_search_finds_sessions_by_any_message_and_marks_the_match(store: SqlStore) -> None:
    rust = session(store, "port the parser to rust", "and add tests", title="Rust port")
    session(store, "write a haiku about autumn")
    hits = store.search("parser")
    assert [(h.session_id, h.title) for h in hits] == [(rust, "Rust port")]
    assert "**parser**" in hits[0].snippet


def test_every_word_must_match_in_one_message(store: SqlStore) -> None:
    both = session(store, "deploy the staging server")
    session(store, "deploy", "server")
    assert [h.session_id for h in store.search("server deploy")] == [both]


def test_stemming_and_case_folding(store: SqlStore) -> None:
    sid = session(store, "Running the Migrations now")
    assert [h.session_id for h in store.search("migration run")] == [sid]


def test_one_hit_per_session_and_the_limit(store: SqlStore) -> None:
    ids = {session(store, "kiwi one", "kiwi two", "kiwi three") for _ in range(5)}
    hits = store.search("kiwi")
    assert len(hits) == 5 and {h.session_id for h in hits} == ids
    assert len(store.search("kiwi", limit=2)) == 2


def test_assistant_text_is_searchable_but_tool_payloads_are_not(store: SqlStore) -> None:
    sid = store.create(cwd="/", provider="p", model="m").id
    store.append(sid, Message.assistant("the answer is quokka"))
    store.append(sid, call("c1", path="wombat.txt"))
    store.append(sid, result("c1", "wombat contents"))
    assert [h.session_id for h in store.search("quokka")] == [sid]
    assert store.search("wombat") == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('say "hello', {"plain"}),
        ('"hello"', {"plain", "ops"}),
        ("hello*", {"plain", "ops"}),
        ("hel*", set()),
        ("-hello", {"plain", "ops"}),
        ("hello -world", {"plain"}),
        ("NEAR(hello world)", set()),
        ("hello NEAR", {"ops"}),
        ("hello AND", {"ops"}),
        ("OR hello", {"ops"}),
        ("col:hello", set()),
        ("^hello", {"plain", "ops"}),
        ("(hello", {"plain", "ops"}),
        ("*", set()),
        ('"', set()),
        ("", set()),
        ("   ", set()),
    ],
)
def test_fts_syntax_in_the_query_is_plain_text(
    store: SqlStore, query: str, found: set[str]
) -> None:
    """Each word matches its own text literally: no operators, prefixes, columns or errors."""
    labels = {
        session(store, "say hello world"): "plain",
        session(store, "hello AND OR NEAR col"): "ops",
    }
    assert {labels[h.session_id] for h in store.search(query)} == found


def test_the_operator_words_themselves_can_be_searched(store: SqlStore) -> None:
    sid = session(store, "the NEAR operator and the OR keyword")
    assert [h.session_id for h in store.search("NEAR OR")] == [sid]


def test_fts_query_quotes_each_word() -> None:
    assert fts_query('a "b" c*') == '"a" """b""" "c*"'
    assert fts_query("  ") == ""


@pytest.mark.parametrize("text", ["a\x00b", "\x00", "kiwi\ud800"])
def test_nul_bytes_and_lone_surrogates_are_searched_as_text(store: SqlStore, text: str) -> None:
    sid = session(store, "a kiwi b")
    assert [h.session_id for h in store.search(text)] in ([], [sid])
