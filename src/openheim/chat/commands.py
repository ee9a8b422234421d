"""The chat's commands: typed with ``:`` or ``/``, parsed here, with a "did you mean" for a
name that is not one. Skills are commands too (``/name``), as they are over ACP."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

COMMANDS: dict[str, str] = {
    "help": "the commands and keys",
    "quit": "leave (also q, exit)",
    "new": "a new session with the same model and startup skills",
    "sessions": "pick a stored session to restore",
    "models": "pick a provider/model; `models NAME` switches at once",
    "agent": "`agent NAME`: run an agent profile as the agent",
    "config": "the effective configuration (secrets masked)",
    "mcp": "MCP servers with their status and tool counts",
    "skills": "the skills available; `skill NAME` activates one",
    "skill": "`skill NAME`: activate a skill for this session",
    "theme": "pick a theme; `theme NAME` applies and keeps it",
    "verbose": "show or hide tool items",
    "cost": "tokens and cost of this session",
    "memory": "long-term memory; `memory TEXT` searches it",
    "export": "`export [FILE]`: the session as Markdown",
    "undo": "`undo [N] [--force]`: restore the files of the last N turns and rewind",
    "clear": "clear the screen (the session goes on)",
}
ALIASES = {"q": "quit", "exit": "quit", "model": "models", "session": "sessions"}


@dataclass(frozen=True)
class Command:
    """A typed command: its name (aliases resolved) and the rest of the line."""

    name: str
    argument: str


@dataclass(frozen=True)
class Unknown:
    """A ``:word`` or ``/word`` that names no command or skill; ``suggestion`` is the closest."""

    name: str
    suggestion: str | None

    def message(self) -> str:
        hint = f"; did you mean :{self.suggestion}?" if self.suggestion else ""
        return f"unknown command :{self.name}{hint} (:help lists them)"


def parse(line: str, skills: Iterable[str] = ()) -> Command | Unknown | None:
    """``line`` as a command; None when it is a prompt (no ``:`` or ``/`` first, or a ``/name``
    that names a skill: the runtime expands it)."""
    text = line.strip()
    if len(text) < 2 or text[0] not in ":/" or not (text[1].isalpha()):
        return None
    word, _, rest = text[1:].partition(" ")
    name = ALIASES.get(word, word)
    if name in COMMANDS:
        return Command(name, rest.strip())
    known = list(skills)
    if text[0] == "/" and word in known:
        return None
    return Unknown(word, suggest(word, [*COMMANDS, *ALIASES, *known]))


def suggest(word: str, names: Sequence[str]) -> str | None:
    """The name closest to ``word``, if one is close enough."""
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None


def complete(prefix: str, skills: Iterable[str] = ()) -> list[str]:
    """Commands (and skill commands) that start with the typed ``:``/``/`` word."""
    if len(prefix) < 1 or prefix[0] not in ":/" or " " in prefix:
        return []
    word = prefix[1:]
    names = sorted({*COMMANDS, *ALIASES, *skills})
    return [prefix[0] + name for name in names if name.startswith(word)]


def help_text(skills: Iterable[str] = ()) -> str:
    """Every command, one a line, then the skills as commands."""
    lines = ["commands (type them with : or /):"]
    lines += [f"  :{name:<9} {about}" for name, about in COMMANDS.items()]
    names = sorted(skills)
    if names:
        lines.append("skills as commands: " + ", ".join(f"/{n}" for n in names))
    return "\n".join(lines)
