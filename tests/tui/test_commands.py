"""Command parsing, "did you mean", completion and the input history."""

from __future__ import annotations

from pathlib import Path

from openheim.chat.commands import COMMANDS, Command, Unknown, complete, help_text, parse
from openheim.chat.history import LIMIT, InputHistory
from openheim.chat.units import tokens


def test_both_prefixes_and_aliases_parse() -> None:
    assert parse(":help") == Command("help", "")
    assert parse("/models fake/big ") == Command("models", "fake/big")
    assert parse(":q") == Command("quit", "")
    assert parse("/exit") == Command("quit", "")


def test_prompts_and_skill_commands_are_not_commands() -> None:
    assert parse("hello") is None
    assert parse("/review this file", skills=["review"]) is None
    assert parse(":)") is None and parse("/") is None


def test_unknown_commands_get_a_suggestion() -> None:
    unknown = parse(":sesions")
    assert unknown == Unknown("sesions", "sessions")
    assert isinstance(unknown, Unknown)
    assert (
        unknown.message() == "unknown command :sesions; did you mean :sessions? (:help lists them)"
    )
    far = parse(":zzzzzz")
    assert isinstance(far, Unknown) and far.suggestion is None


def test_completion_covers_commands_and_skills() -> None:
    assert complete(":th") == [":theme"]
    assert complete("/re", skills=["review"]) == ["/review"]
    assert complete("hello") == [] and complete(":theme x") == []


def test_help_lists_every_command_and_the_skills() -> None:
    text = help_text(["review"])
    assert all(f":{name}" in text for name in COMMANDS)
    assert "/review" in text


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
