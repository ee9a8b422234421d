"""A picker: a filter line over a list, fuzzy-matched as one types; Enter picks, Esc closes.
Sessions, models, themes and files are picked with it. It may open on a chosen entry (the
current model) and take text typed before it was up (``type_text``)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from openheim.chat.files import fuzzy


class Picker(ModalScreen[str | None]):
    """Pick one of ``choices`` (value, label); dismissed with the value, or None."""

    BINDINGS = [Binding("escape", "close", "close"), Binding("down", "down", show=False)]

    def __init__(
        self, title: str, choices: Sequence[tuple[str, str]], selected: str | None = None
    ) -> None:
        """``selected``: the value highlighted when the picker opens (default: the first)."""
        super().__init__(classes="picker")
        self.heading = title
        self.choices = list(choices)
        self.selected = selected
        self.query_text = ""
        """What was typed for the filter before the picker was composed."""
        self._labels = {label: value for value, label in self.choices}

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box"):
            yield Static(self.heading, id="picker-title")
            yield Input(self.query_text, placeholder="type to filter", id="picker-filter")
            yield OptionList(*self._options(self.query_text), id="picker-list")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        values = [option.id for option in listing.options]
        if not self.query_text and self.selected in values:
            listing.highlighted = values.index(self.selected)

    def type_text(self, text: str) -> None:
        """Add ``text`` to the filter, as if typed there."""
        try:
            field = self.query_one(Input)
        except NoMatches:  # not composed yet: the filter starts with it
            self.query_text += text
            return
        field.insert_text_at_cursor(text)

    def _options(self, query: str) -> list[Option]:
        labels = fuzzy(query, [label for _, label in self.choices], limit=200)
        return [Option(escape(label), id=self._labels[label]) for label in labels]

    def on_input_changed(self, event: Input.Changed) -> None:
        listing = self.query_one(OptionList)
        listing.clear_options()
        listing.add_options(self._options(event.value))
        listing.highlighted = 0 if listing.option_count else None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        listing = self.query_one(OptionList)
        if listing.highlighted is not None:
            self.dismiss(listing.get_option_at_index(listing.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_down(self) -> None:
        self.query_one(OptionList).focus()

    def action_close(self) -> None:
        self.dismiss(None)
