"""The one command registry of every surface a person types into: the REPL, the terminal UI,
ACP, the ``/ws`` agent channel and the chat gateway.

Each command has a name, aliases, a help line, what it takes after its name, the surfaces that
offer it and, when it acts on a session alone, ``run(session, argument)``. A command with no
``run`` acts on what only its surface holds (the screen, which session is open, a chat
platform's conversation): the surface does it, under the name and help given here. Surfaces
render a ``CommandResult``; none keeps a list of its own.

Skills and prompt templates are commands too, wherever a person types: ``PromptCommands``
expands ``/skill rest`` and ``/template ARG=VALUE rest`` into the prompt
(``runtime.prompt_commands``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from openheim.errors import ConfigError
from openheim.events import compaction_line, event_to_dict
from openheim.redaction.secrets import redact_data
from openheim.runtime.compaction import pin_prompt, pinned_line
from openheim.runtime.session import Session
from openheim.runtime.undo import undo_arguments

Surface = Literal["repl", "tui", "acp", "ws", "gateway"]
SURFACES: tuple[Surface, ...] = ("repl", "tui", "acp", "ws", "gateway")
COLON: frozenset[Surface] = frozenset({"repl", "tui"})
"""Where a command may also be typed with ``:`` (a terminal); elsewhere only ``/``."""


@dataclass(frozen=True)
class CommandResult:
    """What a command did: a line or more for a person, and ``data`` for a client that reads
    fields (the ``/ws`` reply's ``compacted`` or ``undone``)."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)


Runner = Callable[[Session, str], Awaitable[CommandResult]]


@dataclass(frozen=True)
class CommandSpec:
    """One command. ``takes`` is what follows its name (empty: nothing); ``idle`` marks one
    refused while a turn runs (it reopens, rewinds or compacts the session)."""

    name: str
    help: str
    surfaces: frozenset[Surface]
    aliases: tuple[str, ...] = ()
    takes: str = ""
    idle: bool = False
    run: Runner | None = None

    def usage(self, prefix: str = "/") -> str:
        """How it is typed: ``/undo [N] [--force]``."""
        return f"{prefix}{self.name}" + (f" {self.takes}" if self.takes else "")


async def _compact(session: Session, argument: str) -> CommandResult:
    done = await session.compact()
    if done is None:
        return CommandResult("nothing to compact yet", {"compacted": None})
    return CommandResult(compaction_line(done), {"compacted": redact_data(event_to_dict(done))})


async def _pin(session: Session, argument: str) -> CommandResult:
    return CommandResult(pinned_line(pin_prompt(session)))


async def _undo(session: Session, argument: str) -> CommandResult:
    """``undo [N] [--force]``; a refusal (files changed outside openheim) raises UndoRefused."""
    turns, force = undo_arguments(argument)
    report = await session.undo(turns, force=force)
    undone = {
        "turns": report.turns,
        "restored": list(report.restored),
        "removed": list(report.removed),
        "shell_changed": list(report.shell_changed),
    }
    return CommandResult(report.summary(), {"undone": undone})


LABELS: dict[Surface, str] = {
    "repl": "the REPL",
    "tui": "the terminal UI",
    "acp": "ACP",
    "ws": "the web page",
    "gateway": "the chat gateway",
}
"""What a person calls each surface."""

_CHAT: frozenset[Surface] = COLON
_TUI: frozenset[Surface] = frozenset({"tui"})
_SESSION: frozenset[Surface] = frozenset({"repl", "tui", "acp", "ws"})
_GATEWAY: frozenset[Surface] = frozenset({"gateway"})
_ALL_CHAT: frozenset[Surface] = frozenset({"repl", "tui", "gateway"})

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("help", "these commands", _ALL_CHAT),
    CommandSpec("quit", "leave", _CHAT, aliases=("q", "exit")),
    CommandSpec("new", "start a new session (same model and startup skills)", _ALL_CHAT, idle=True),
    CommandSpec(
        "sessions", "restore a stored session", _CHAT, aliases=("session",), takes="[ID]", idle=True
    ),
    CommandSpec(
        "models",
        "list the models; `models NAME` switches",
        _ALL_CHAT,
        aliases=("model",),
        takes="[NAME]",
        idle=True,
    ),
    CommandSpec("agent", "run an agent profile as the agent", _CHAT, takes="NAME", idle=True),
    CommandSpec("config", "the effective configuration (secrets masked)", _CHAT),
    CommandSpec("mcp", "MCP servers with their status and tool counts", _CHAT),
    CommandSpec("skills", "the skills available; `skill NAME` activates one", _CHAT),
    CommandSpec("skill", "activate a skill for this session", _CHAT, takes="NAME", idle=True),
    CommandSpec("theme", "pick a theme; `theme NAME` applies and keeps it", _TUI, takes="[NAME]"),
    CommandSpec("verbose", "show or hide tool items", _CHAT),
    CommandSpec("cost", "tokens and cost of this session", _CHAT),
    CommandSpec("memory", "long-term memory; `memory TEXT` searches it", _CHAT, takes="[TEXT]"),
    CommandSpec("export", "the session as Markdown", _CHAT, takes="[FILE]"),
    CommandSpec(
        "compact",
        "summarise the older turns now (the history keeps them)",
        _SESSION,
        idle=True,
        run=_compact,
    ),
    CommandSpec(
        "pin", "keep your latest prompt verbatim when the session is compacted", _SESSION, run=_pin
    ),
    CommandSpec(
        "undo",
        "restore the files of the last N turns and rewind",
        _SESSION,
        takes="[N] [--force]",
        idle=True,
        run=_undo,
    ),
    CommandSpec("clear", "clear the screen (the session goes on)", _CHAT),
    CommandSpec("stop", "stop the running answer", _GATEWAY),
    CommandSpec("auth", "the passphrase, in a private chat", _GATEWAY, takes="PASSPHRASE"),
)
"""Every command, in the order help lists them."""

NAMES = frozenset(name for spec in COMMANDS for name in (spec.name, *spec.aliases))
"""Every command word on any surface: a skill or template of one of these names is no command."""


@dataclass(frozen=True)
class Invocation:
    """A typed command: its spec (aliases resolved) and the rest of the line."""

    spec: CommandSpec
    argument: str

    @property
    def name(self) -> str:
        return self.spec.name

    async def run(self, session: Session) -> CommandResult:
        """Run a session command; ConfigError for an argument it does not take."""
        if self.spec.run is None:
            raise RuntimeError(f"{self.name} is done by its surface")
        if self.argument and not self.spec.takes:
            usage = self.spec.usage()
            raise ConfigError(f"{usage} takes nothing after its name", hint=f"send {usage} alone")
        return await self.spec.run(session, self.argument)


@dataclass(frozen=True)
class Unknown:
    """A ``/word`` that names no command, skill or template here; ``suggestion`` is the
    closest name, ``elsewhere`` the surfaces that do offer it."""

    name: str
    suggestion: str | None
    prefix: str = "/"
    elsewhere: tuple[Surface, ...] = ()

    def message(self) -> str:
        p = self.prefix
        if self.elsewhere:
            *others, last = [LABELS[surface] for surface in self.elsewhere]
            where = f"{', '.join(others)} and {last}" if others else last
            return f"{p}{self.name} is not offered here ({where} offer{'' if others else 's'} it)"
        hint = f"; did you mean {p}{self.suggestion}?" if self.suggestion else ""
        return f"unknown command {p}{self.name}{hint} ({p}help lists them)"


def offered(surface: Surface) -> list[CommandSpec]:
    """The commands ``surface`` offers, in help order."""
    return [spec for spec in COMMANDS if surface in spec.surfaces]


def find(word: str, surface: Surface) -> CommandSpec | None:
    """The command ``word`` (a name or alias, any case) names on ``surface``."""
    word = word.lower()
    for spec in offered(surface):
        if word == spec.name or word in spec.aliases:
            return spec
    return None


_WORD = re.compile(r"([:/])([A-Za-z][\w-]*)(?:@\w*)?")
"""A command word after ``:`` or ``/``, with Telegram's ``@BotName`` after it."""


def parse(line: str, surface: Surface, prompts: Iterable[str] = ()) -> Invocation | Unknown | None:
    """``line`` as a command on ``surface``; None when it is a prompt: it does not start with a
    command word, or its ``/word`` names a skill or template (``prompts``: expanded later).

    A command's word ends at any character that cannot be part of it (``/auth`` then a line
    break or an odd space is still ``/auth``: a passphrase must never pass for a prompt).
    Another word is an unknown command only when a space or the end follows it, so a prompt
    that starts with a path (``/usr/bin ...``) is a prompt."""
    text = line.strip()
    match = _WORD.match(text)
    if match is None or (match[1] == ":" and surface not in COLON):
        return None
    word, rest = match[2], text[match.end() :]
    spec = find(word, surface)
    if spec is not None:
        return Invocation(spec, rest.strip())
    known = list(prompts)
    if (rest and not rest[0].isspace()) or (match[1] == "/" and word in known):
        return None
    prefix = ":" if surface in COLON else "/"
    other = next((spec for spec in COMMANDS if word.lower() in (spec.name, *spec.aliases)), None)
    if other is not None:
        elsewhere = tuple(s for s in SURFACES if s in other.surfaces)
        return Unknown(word, None, prefix, elsewhere)
    return Unknown(word, suggest(word, [*names(surface), *known]), prefix)


def names(surface: Surface) -> list[str]:
    """The command words (names and aliases) ``surface`` offers."""
    return [name for spec in offered(surface) for name in (spec.name, *spec.aliases)]


def suggest(word: str, choices: Sequence[str]) -> str | None:
    """The choice closest to ``word``, if one is close enough."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def complete(prefix: str, surface: Surface, prompts: Iterable[str] = ()) -> list[str]:
    """The command words (and skill and template commands) that start with the typed word."""
    if len(prefix) < 1 or prefix[0] not in ":/" or " " in prefix:
        return []
    word = prefix[1:]
    choices = sorted({*names(surface), *prompts})
    return [prefix[0] + name for name in choices if name.startswith(word)]


def help_text(surface: Surface, prompts: Iterable[str] = ()) -> str:
    """The commands ``surface`` offers, one a line, then the skills and templates."""
    colon = surface in COLON
    p = ":" if colon else "/"
    lines = ["Commands (type them with : or /):" if colon else "Commands:"]
    for spec in offered(surface):
        aliases = f" (also {', '.join(spec.aliases)})" if spec.aliases else ""
        lines.append(f"  {spec.usage(p):<20} {spec.help}{aliases}")
    shown = sorted(prompts)
    if shown:
        lines.append("skills and templates as commands: " + ", ".join(f"/{n}" for n in shown))
    lines.append("Anything else is a prompt to the agent.")
    return "\n".join(lines)
