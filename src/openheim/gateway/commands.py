"""Commands typed in a chat: ``/auth``, ``/new``, ``/model``, ``/stop``, ``/help``."""

from __future__ import annotations

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
    ``/help@BotName`` form counts as ``/help``."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    word, _, rest = stripped[1:].partition(" ")
    name = word.split("@", 1)[0].lower()
    if not name or not name.replace("_", "").isalnum():
        return None
    return Command(name, rest.strip())
