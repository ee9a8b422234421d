"""The footer: provider/model, the approval mode, context used against the window, the
session's tokens and cost (from its usage meter, when the model's prices are known), a busy
indicator with the turn's elapsed time and tokens per second (thinking included) while it runs
(redrawn four times a second), and hints such as "press Ctrl+C again to quit". On a narrow
terminal it shows the parts that fit, the most needed first (``RANK``)."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from openheim.chat.units import tokens
from openheim.config.schema import mode_name
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

    def line(self, width: int | None = None) -> str:
        """The footer's text; with a ``width``, only the parts that fit, taken by importance
        (``RANK``) and shown in their usual order, so a narrow terminal still shows the hint
        and the ticker."""
        parts = {
            "model": self.model,
            "mode": f"approval {mode_name(self.mode)} (⇧Tab)" if self.mode else "",
            "context": self.context,
            "tokens": f"{tokens(self.usage.total_tokens)} tok",
            "cost": "" if self.cost is None else f"${self.cost:.4f}",
            "busy": "",
            "hint": self.hint,
        }
        if self.busy_since is not None:
            spin = SPINNER[self._frame % len(SPINNER)]
            elapsed = elapsed_text(time.monotonic() - self.busy_since)
            parts["busy"] = f"{spin} {elapsed} · {self.rate():.0f} tok/s"
        kept: set[str] = set()
        for name in RANK:
            candidate = kept | {name}
            if parts[name] and (
                not kept or width is None or len(_joined(parts, candidate)) <= width
            ):
                kept = candidate
        return _joined(parts, kept)

    def refresh_line(self) -> None:
        width = self.content_region.width if self.is_mounted else 0
        self.update(Text(self.line(width or None)))

    def on_resize(self) -> None:
        self.refresh_line()


RANK = ("hint", "busy", "model", "cost", "context", "mode", "tokens")
"""The footer's parts, the one a narrow terminal keeps first ("press Ctrl+C again to quit",
always shown) to the one it leaves out first."""


def _joined(parts: dict[str, str], kept: set[str]) -> str:
    """The ``kept`` parts in the footer's order, joined."""
    return " · ".join(text for name, text in parts.items() if name in kept and text)


def elapsed_text(seconds: float) -> str:
    """``7s``, ``2m 05s``: how long a turn has run, in whole seconds."""
    whole = int(max(seconds, 0))
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m {whole % 60:02d}s"
