"""The one command registry: parsing on each surface, aliases, "did you mean", which surfaces
offer which command, completion, help, and the session commands' argument rules."""

from __future__ import annotations

import pytest

from openheim.errors import ConfigError
from openheim.runtime.commands import (
    COMMANDS,
    NAMES,
    SURFACES,
    Invocation,
    Surface,
    Unknown,
    complete,
    find,
    help_text,
    offered,
    parse,
)

PROMPTS = ("review", "fix")
"""Skill and template commands the surface knows (they are prompts, expanded later)."""


@pytest.mark.parametrize(
    ("surface", "line", "name", "argument"),
    [
        ("repl", ":help", "help", ""),
        ("repl", "/models fake/big ", "models", "fake/big"),
        ("repl", ":q", "quit", ""),
        ("tui", "/exit", "quit", ""),
        ("tui", ":session abc", "sessions", "abc"),
        ("tui", ":undo 2 --force", "undo", "2 --force"),
        ("acp", "/undo 2", "undo", "2"),
        ("acp", "/compact", "compact", ""),
        ("ws", "/pin", "pin", ""),
        ("gateway", "/help", "help", ""),
        ("gateway", "/Model  fake-small ", "models", "fake-small"),
        ("gateway", "/models fake-small", "models", "fake-small"),
        ("gateway", "/stop@Bot", "stop", ""),
        ("gateway", "/auth\nopen sesame", "auth", "open sesame"),
        ("gateway", "/auth\topen sesame", "auth", "open sesame"),
        ("gateway", "/auth\u00a0open sesame", "auth", "open sesame"),
        ("gateway", "/auth@Bot\nopen sesame", "auth", "open sesame"),
        ("gateway", "/auth\u200bx", "auth", "\u200bx"),
        ("gateway", "/new.", "new", "."),
    ],
)
def test_commands_parse(surface: Surface, line: str, name: str, argument: str) -> None:
    parsed = parse(line, surface, PROMPTS)
    assert isinstance(parsed, Invocation)
    assert (parsed.name, parsed.argument) == (name, argument)


@pytest.mark.parametrize(
    ("surface", "line"),
    [
        ("repl", "hello"),
        ("repl", ":)"),
        ("repl", "/"),
        ("tui", "/review this file"),
        ("tui", "/fix lang=go x"),
        ("acp", ":compact"),
        ("ws", "/review now"),
        ("gateway", "hello"),
        ("gateway", "//not a command"),
        ("gateway", "/ "),
        ("gateway", "/../etc"),
        ("gateway", "/usr/bin is gone"),
        ("gateway", ":help"),
        ("gateway", "/review the diff"),
    ],
)
def test_prompts_are_not_commands(surface: Surface, line: str) -> None:
    assert parse(line, surface, PROMPTS) is None


@pytest.mark.parametrize(
    ("surface", "line", "message"),
    [
        ("repl", ":sesions", "unknown command :sesions; "
         "did you mean :sessions? (:help lists them)"),
        ("tui", ":modles", "unknown command :modles; did you mean :models? (:help lists them)"),
        ("tui", "/reviw x", "unknown command :reviw; did you mean :review? (:help lists them)"),
        ("gateway", "/hepl", "unknown command /hepl; did you mean /help? (/help lists them)"),
        ("gateway", "/zzzzzz", "unknown command /zzzzzz (/help lists them)"),
        ("repl", ":theme nord", ":theme is not offered here (the terminal UI offers it)"),
        ("gateway", "/undo", "/undo is not offered here "
         "(the REPL, the terminal UI, ACP and the web page offer it)"),
        ("tui", "/auth x", ":auth is not offered here (the chat gateway offers it)"),
    ],
)  # fmt: skip
def test_unknown_commands_say_what_to_do(surface: Surface, line: str, message: str) -> None:
    parsed = parse(line, surface, PROMPTS)
    assert isinstance(parsed, Unknown) and parsed.message() == message


@pytest.mark.parametrize(
    ("name", "surfaces"),
    [
        ("help", {"repl", "tui", "gateway"}),
        ("new", {"repl", "tui", "gateway"}),
        ("models", {"repl", "tui", "gateway"}),
        ("compact", {"repl", "tui", "acp", "ws"}),
        ("pin", {"repl", "tui", "acp", "ws"}),
        ("undo", {"repl", "tui", "acp", "ws"}),
        ("theme", {"tui"}),
        ("verbose", {"repl", "tui"}),
        ("stop", {"gateway"}),
        ("auth", {"gateway"}),
    ],
)
def test_each_command_is_offered_where_it_works(name: str, surfaces: set[str]) -> None:
    assert {s for s in SURFACES if find(name, s) is not None} == surfaces


def test_names_are_unique_and_session_commands_run_on_a_session() -> None:
    words = [w for spec in COMMANDS for w in (spec.name, *spec.aliases)]
    assert len(words) == len(set(words)) == len(NAMES)
    assert {spec.name for spec in COMMANDS if spec.run is not None} == {"compact", "pin", "undo"}
    assert [spec.name for spec in offered("acp")] == ["compact", "pin", "undo"]


@pytest.mark.parametrize(
    ("surface", "prefix", "found"),
    [
        ("tui", ":th", [":theme"]),
        ("repl", ":th", []),
        ("tui", "/re", ["/review"]),
        ("repl", "hello", []),
        ("tui", ":theme x", []),
        ("gateway", "/st", ["/stop"]),
    ],
)
def test_completion(surface: Surface, prefix: str, found: list[str]) -> None:
    assert complete(prefix, surface, PROMPTS) == found


@pytest.mark.parametrize("surface", ["repl", "tui", "gateway"])
def test_help_lists_what_the_surface_offers_and_the_prompt_commands(surface: Surface) -> None:
    text = help_text(surface, PROMPTS)
    prefix = ":" if surface in ("repl", "tui") else "/"
    assert all(f"{prefix}{spec.name}" in text for spec in offered(surface))
    assert all(
        f"{prefix}{spec.name} " not in text for spec in COMMANDS if spec not in offered(surface)
    )
    assert "/review" in text and "/fix" in text


async def test_a_session_command_refuses_an_argument_it_does_not_take() -> None:
    parsed = parse("/compact now please", "acp")
    assert isinstance(parsed, Invocation)
    with pytest.raises(ConfigError, match="/compact takes nothing after its name"):
        await parsed.run(None)  # type: ignore[arg-type]  # refused before the session is used
