"""The chat's input history and token counts (its commands are the registry's:
``tests/runtime/test_commands.py``)."""

from __future__ import annotations

from pathlib import Path

from openheim.chat.history import LIMIT, InputHistory
from openheim.chat.units import tokens


def test_history_walks_keeps_the_draft_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "data" / "chat_history"
    history = InputHistory(path)
    for line in ["one", "two", "two", "three\nlines"]:
        history.add(line)
    assert history.previous("draft") == "three\nlines"
    assert history.previous("ignored") == "two"
    assert history.previous("ignored") == "one"
    assert history.previous("ignored") is None
    assert [history.next(), history.next(), history.next()] == ["two", "three\nlines", "draft"]
    assert history.next() is None
    assert InputHistory(path).entries == ["one", "two", "three\nlines"]


def test_history_is_bounded_and_survives_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "chat_history"
    path.write_text('"ok"\nnot json\n42\n')
    history = InputHistory(path)
    assert history.entries == ["ok"]
    for n in range(LIMIT + 5):
        history.add(f"line {n}")
    assert len(InputHistory(path).entries) == LIMIT
    assert InputHistory(path).entries[-1] == f"line {LIMIT + 4}"


def test_token_counts_read_as_people_read_them() -> None:
    assert [tokens(n) for n in (0, 999, 1000, 8400, 128_000)] == ["0", "999", "1k", "8.4k", "128k"]
