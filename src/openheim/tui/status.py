"""The footer: provider/model, the approval mode, context used against the window, the
session's tokens and cost (from its usage meter, when the model's prices are known), a busy
indicator with the turn's elapsed time and tokens per second (thinking included) while it runs
(redrawn four times a second), and hints such as "press Ctrl+C again to quit"."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from openheim.chat.units import tokens
from openheim.messages import Usage

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class StatusBar(Static):
    """One line of facts about the session; ``refresh_line`` redraws it."""

    def __init__(self) -> None:
        super().__init__("", id="status")
        self.model = "opening the session…"
        self.mode = ""
        """The session's approval mode (Shift+Tab changes it)."""
        self.context = ""
        self.usage = Usage()
        self.cost: float | None = None
        self.hint = ""
        self.busy_since: float | None = None
        self.streamed_chars = 0
        self._frame = 0

    def on_mount(self) -> None:
        self.set_interval(0.25, self._tick)
        self.refresh_line()

    def start(self) -> None:
        self.busy_since = time.monotonic()
        self.streamed_chars = 0
        self.refresh_line()

    def stop(self) -> None:
        self.busy_since = None
        self.refresh_line()

    def _tick(self) -> None:
        if self.busy_since is not None:
            self._frame += 1
            self.refresh_line()

    def rate(self) -> float:
        """Tokens per second of the streaming answer and thinking (about four characters a
        token)."""
        if self.busy_since is None:
            return 0.0
        elapsed = max(time.monotonic() - self.busy_since, 1e-3)
        return self.streamed_chars / 4 / elapsed

    def line(self) -> str:
        parts = [self.model, f"approval {self.mode} (⇧Tab)" if self.mode else "", self.context]
        parts.append(f"{tokens(self.usage.total_tokens)} tok")
        if self.cost is not None:
            parts.append(f"${self.cost:.4f}")
        if self.busy_since is not None:
            spin = SPINNER[self._frame % len(SPINNER)]
            elapsed = elapsed_text(time.monotonic() - self.busy_since)
            parts.append(f"{spin} {elapsed} · {self.rate():.0f} tok/s")
        if self.hint:
            parts.append(self.hint)
        return " · ".join(p for p in parts if p)

    def refresh_line(self) -> None:
        self.update(Text(self.line()))


def elapsed_text(seconds: float) -> str:
    """``7s``, ``2m 05s``: how long a turn has run, in whole seconds."""
    whole = int(max(seconds, 0))
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m {whole % 60:02d}s"
