"""The input box: Enter sends; Shift+Enter or Ctrl+J inserts a newline (bracketed paste
inserts multi-line text as it is); Ctrl+U clears; Up/Down on the first/last line walk the
input history; Tab completes commands, skill names and ``@`` paths; Shift+Tab asks for the
next approval mode; typing ``@`` opens the file picker."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from openheim.chat.history import InputHistory


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

    async def _on_key(self, event: events.Key) -> None:
        handled = self._handle(event.key, event.character)
        if handled:
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)
        if event.character == "@":
            self.post_message(self.MentionStarted())

    def _handle(self, key: str, character: str | None) -> bool:
        """Do what ``key`` means here; False leaves it to the text area."""
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
