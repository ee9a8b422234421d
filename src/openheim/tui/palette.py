"""The ``/`` command palette: typing ``/`` at the start of the input lists the commands of the
registry (``runtime.commands``) with their help, then the skills and templates the chat offers
as commands, filtered as one types. Up/Down move, Tab or Enter complete, Esc closes; the input
keeps the focus all along, so typing goes on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from openheim.runtime import commands

if TYPE_CHECKING:
    from openheim.chat.session import Chat

KEYS = frozenset({"up", "down", "tab", "enter", "escape"})
"""The keys the palette takes while it is open."""


@dataclass(frozen=True)
class Entry:
    """One line of the palette: what ``/name`` completes to, how it is typed and its help."""

    name: str
    usage: str
    help: str
    aliases: tuple[str, ...] = ()

    def matches(self, word: str) -> bool:
        return any(name.startswith(word) for name in (self.name, *self.aliases))


def entries_of(chat: Chat) -> list[Entry]:
    """The terminal UI's commands in help order, then the chat's skills and templates."""
    shown = [
        Entry(spec.name, spec.usage("/"), spec.help, spec.aliases)
        for spec in commands.offered("tui")
    ]
    offered = chat.prompt_commands
    skills = offered.skill_commands()
    shown += [Entry(s.name, f"/{s.name}", f"skill: {s.description}") for s in skills]
    shown += [
        Entry(p.name, f"/{p.name}", f"template: {p.description}")
        for p in offered.template_commands()
    ]
    return shown


def typed_word(text: str) -> str | None:
    """The command word being typed (``"he"`` for ``/he``), or None when ``text`` is not a
    ``/`` and a word alone."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return None
    return text[1:].lower()


class Palette(OptionList):
    """The list under the conversation; hidden unless the input holds ``/`` and a word."""

    can_focus = False

    class Picked(Message):
        """An entry was clicked: the input completes it."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self) -> None:
        super().__init__(id="palette")
        self.display = False
        self.entries: list[Entry] = []
        self.shown: list[Entry] = []

    @property
    def open(self) -> bool:
        return bool(self.display and self.shown)

    def filter(self, text: str) -> None:
        """Show the entries ``text`` may become; hide when there are none."""
        word = typed_word(text)
        self.shown = [] if word is None else [e for e in self.entries if e.matches(word)]
        self.clear_options()
        width = max((len(e.usage) for e in self.shown), default=0)
        self.add_options([Option(_line(e, width), id=e.name) for e in self.shown])
        self.display = bool(self.shown)
        self.highlighted = 0 if self.shown else None

    def move(self, step: int) -> None:
        if self.shown:
            self.highlighted = ((self.highlighted or 0) + step) % len(self.shown)

    def chosen(self) -> str | None:
        """The highlighted entry's name."""
        if not self.open or self.highlighted is None:
            return None
        return self.shown[self.highlighted].name

    def close(self) -> None:
        self.shown = []
        self.display = False

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Picked(event.option.id))


def _line(entry: Entry, width: int) -> Text:
    """``/usage   help`` as plain text (a help line is never read as markup)."""
    line = Text(entry.usage.ljust(width + 2), style="bold")
    line.append(entry.help)
    return line
