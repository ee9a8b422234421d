"""Commands typed in a chat: ``/auth``, ``/new``, ``/model``, ``/stop``, ``/help``."""

from __future__ import annotations

import re
from dataclasses import dataclass

NAMES = ("auth", "new", "model", "stop", "help")

HELP = (
    "Commands:\n"
    "/new - start a new conversation\n"
    "/model NAME - use another model (/model alone lists them)\n"
    "/stop - stop the running answer\n"
    "/help - this list\n"
    "Anything else is a message to the agent."
)


_WORD = re.compile(r"/(\w+)(?:@\w*)?")
"""A command word (letters, digits, ``_``) after the slash, with Telegram's ``@BotName``."""


@dataclass(frozen=True)
class Command:
    """A command's name (one of ``NAMES``, or what was typed when it is none of them) and the
    rest of the line."""

    name: str
    argument: str = ""

    @property
    def known(self) -> bool:
        return self.name in NAMES


def parse_command(text: str) -> Command | None:
    """The command ``text`` is, or None when it is a message to the agent. Telegram's
    ``/help@BotName`` form counts as ``/help``.

    A known command word ends at any character that cannot be part of it (``/auth`` then a
    line break, a tab or an odd space is still ``/auth``: a passphrase must never pass for a
    message). Another word is a command only when a space or the end follows it, so a message
    that starts with a path (``/usr/bin ...``) still reaches the agent."""
    stripped = text.strip()
    match = _WORD.match(stripped)
    if match is None:
        return None
    name = match[1].lower()
    rest = stripped[match.end() :]
    if name not in NAMES and rest and not rest[0].isspace():
        return None
    return Command(name, rest.strip())
