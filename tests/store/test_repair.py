"""Dangling tool calls get an error result, in memory and, once, in the store."""

from __future__ import annotations

from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.store import repair_history
from openheim.store.base import INTERRUPTED
from openheim.store.common import SqlStore
from openheim.store.sqlite import SQLiteStore

from .support import call, raw, result


def interrupted(call_id: str) -> ToolResultBlock:
    return ToolResultBlock(call_id, INTERRUPTED, is_error=True)


def two_calls() -> Message:
    return Message(
        "assistant", (ToolUseBlock("a", "read_file", {}), ToolUseBlock("b", "grep", {"q": "x"}))
    )


def test_a_valid_history_is_returned_unchanged() -> None:
    history = [Message.user("hi"), call("c1"), result("c1"), Message.assistant("done")]
    assert repair_history(history) == history


def test_a_trailing_call_gets_a_new_results_message() -> None:
    history = [Message.user("hi"), two_calls()]
    assert repair_history(history) == [
        *history,
        Message("user", (interrupted("a"), interrupted("b"))),
    ]


def test_a_partly_answered_call_gets_the_missing_result_after_the_others() -> None:
    partial = Message("user", (ToolResultBlock("b", "found"), TextBlock("also this")))
    repaired = repair_history([two_calls(), partial])
    assert repaired[1] == Message(
        "user", (ToolResultBlock("b", "found"), interrupted("a"), TextBlock("also this"))
    )


def test_a_new_prompt_after_a_crash_carries_the_results_first() -> None:
    repaired = repair_history([call("c1"), Message.user("are you there?")])
    assert repaired[1] == Message("user", (interrupted("c1"), TextBlock("are you there?")))


def test_two_assistant_messages_in_a_row_get_results_between_them() -> None:
    repaired = repair_history([call("c1"), Message.assistant("hm"), Message.user("ok")])
    assert repaired == [
        call("c1"),
        Message("user", (interrupted("c1"),)),
        Message.assistant("hm"),
        Message.user("ok"),
    ]


def rows(store: SqlStore, session_id: str) -> list[tuple[int, str]]:
    """The stored ``(seq, role)`` of each message, as the store reads its own tables."""
    found = store._read(
        "SELECT seq, role FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
    )
    return [(row["seq"], row["role"]) for row in found]


def test_the_repair_is_persisted_once(sqlite_store: SQLiteStore) -> None:
    sid = sqlite_store.create(cwd="/", provider="p", model="m").id
    for message in (Message.user("go"), call("c1"), Message.assistant("crashed"), call("c2")):
        sqlite_store.append(sid, message)
    with raw(sqlite_store.path) as watcher:
        version = watcher.execute("PRAGMA data_version").fetchone()[0]
        first = sqlite_store.messages(sid)
        after_first = watcher.execute("PRAGMA data_version").fetchone()[0]
        assert sqlite_store.messages(sid) == first
        after_second = watcher.execute("PRAGMA data_version").fetchone()[0]
    assert after_first != version, "the first load stores the repair"
    assert after_second == after_first, "a repaired history needs no second write"
    assert [m.content[0] for m in first if m.role == "user"][1:] == [
        interrupted("c1"),
        interrupted("c2"),
    ]
    assert rows(sqlite_store, sid) == [(i, m.role) for i, m in enumerate(first)]
    assert sqlite_store.get(sid).message_count == len(first) == 6


def test_appending_after_a_repair_continues_the_sequence(store: SqlStore) -> None:
    sid = store.create(cwd="/", provider="p", model="m").id
    store.append(sid, call("c1"))
    store.messages(sid)
    store.append(sid, Message.user("next"))
    assert [m.role for m in store.messages(sid)] == ["assistant", "user", "user"]
    assert [seq for seq, _ in rows(store, sid)] == [0, 1, 2]
