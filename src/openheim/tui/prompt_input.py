"""The input box: Enter sends; Shift+Enter or Ctrl+J inserts a newline (bracketed paste
inserts multi-line text as it is); Ctrl+U clears; Up/Down on the first/last line walk the
input history; Tab completes commands, skill names and ``@`` paths; Shift+Tab asks for the
next approval mode; ``/`` at the start opens the command palette, whose keys come first while
it is open; typing ``@`` opens the file picker, and what is typed before the picker is up goes
to it, not into the input."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from openheim.chat.history import InputHistory
from openheim.tui import palette


class PromptInput(TextArea):
    """A multi-line input with the keys above; ``Submitted`` carries the text sent."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class MentionStarted(Message):
        """``@`` was typed: the app opens the file picker."""

    class ModeCycled(Message):
        """Shift+Tab was pressed: the app switches the session to the next approval mode."""

    def __init__(self, history: InputHistory, complete: Callable[[str, str], list[str]]) -> None:
        """``complete(head, word)``: what the last ``word`` may become after ``head``."""
        super().__init__(id="input", soft_wrap=True, show_line_numbers=False, compact=True)
        self.inputs = history
        self.complete = complete
        self.palette: palette.Palette | None = None
        self._mention: list[str] | None = None
        """Characters typed after ``@`` before the file picker took them (None: no picker)."""
        self._mention_sink: Callable[[str], None] | None = None

    async def _on_key(self, event: events.Key) -> None:
        mention = self._mention is not None and event.is_printable and bool(event.character)
        handled = self._to_mention(event.character or "") if mention else self._handle(event.key)
        if handled:
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)
        if event.character == "@":
            self._mention = []
            self.post_message(self.MentionStarted())

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self.palette is not None:
            self.palette.filter(self.text)

    def _handle(self, key: str) -> bool:
        """Do what ``key`` means here; False leaves it to the text area."""
        shown = self.palette
        if shown is not None and shown.open and key in palette.KEYS and self._palette_key(key):
            return True
        if key == "enter":
            text = self.text
            if text.strip():
                self.inputs.add(text)
                self.load_text("")
                self.post_message(self.Submitted(text))
            return True
        if key in ("shift+enter", "ctrl+j"):
            self.insert("\n")
            return True
        if key == "ctrl+u":
            self.load_text("")
            return True
        if key == "shift+tab":
            self.post_message(self.ModeCycled())
            return True
        if key == "up" and self.cursor_location[0] == 0:
            return self._recall(self.inputs.previous(self.text))
        if key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            return self._recall(self.inputs.next())
        if key == "tab":
            self._complete()
            return True
        return False

    def _palette_key(self, key: str) -> bool:
        """Up/Down move in the palette, Esc closes it, Tab and Enter complete its entry
        (Enter on a command typed out in full sends it: False)."""
        assert self.palette is not None
        if key in ("up", "down"):
            self.palette.move(-1 if key == "up" else 1)
            return True
        if key == "escape":
            self.palette.close()
            return True
        name = self.palette.chosen()
        if name is None or (key == "enter" and self.text.strip().lower() == f"/{name}"):
            return False
        self.use_command(name)
        return True

    def use_command(self, name: str) -> None:
        """``/name `` in the input, ready for its argument."""
        self.load_text(f"/{name} ")
        self.move_cursor(self.document.end)

    def mention_to(self, sink: Callable[[str], None]) -> None:
        """The file picker is up: what was typed after ``@`` goes to ``sink``, and so does
        anything typed before the picker has the keyboard."""
        if self._mention:
            sink("".join(self._mention))
        self._mention = []
        self._mention_sink = sink

    def end_mention(self) -> None:
        """The picker is closed (or never opened: what was typed lands in the input)."""
        left = "".join(self._mention or []) if self._mention_sink is None else ""
        self._mention, self._mention_sink = None, None
        if left:
            self.insert(left)

    def _to_mention(self, character: str) -> bool:
        if self._mention_sink is not None:
            self._mention_sink(character)
        elif self._mention is not None:
            self._mention.append(character)
        return True

    def _recall(self, text: str | None) -> bool:
        if text is not None:
            self.load_text(text)
            self.move_cursor(self.document.end)
        return True

    def _complete(self) -> None:
        """Complete the last word: the unique match, else the longest common start of them."""
        text = self.text
        head, _, word = text.rpartition(" ") if " " in text else ("", "", text)
        matches = self.complete(head, word) if word else []
        if not matches:
            return
        done = matches[0] if len(matches) == 1 else _common_start(matches)
        if len(matches) > 1:
            self.notify("  ".join(matches[:12]), timeout=3, markup=False)
        self.load_text(f"{head} {done}" if head else done)
        self.move_cursor(self.document.end)

    def insert_mention(self, path: str) -> None:
        """Put ``path`` after the ``@`` just typed, then a space."""
        self.insert(f"{path} ")


def _common_start(words: list[str]) -> str:
    """The longest text every word starts with."""
    first, last = min(words), max(words)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]
