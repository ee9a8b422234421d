"""SIGINT and SIGTERM during ``openheim run``: a clean stop, and an exit code naming the signal.

Either signal stops the run as Ctrl-C always did: running commands are killed, every unanswered
tool call gets a "cancelled" result and the history is saved. While the session is still
opening (MCP servers starting, say) the opening itself is cancelled, so a stop never waits for a
slow start-up. The exit code tells the two apart as shells do (128 + the signal number): 130 for
SIGINT, 143 for SIGTERM. A terminal approval question that is waiting is abandoned.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from openheim.term import exit_codes

SIGNALS = (signal.SIGINT, signal.SIGTERM)
Handler = Callable[[int, FrameType | None], Any] | int | None
"""What ``signal.getsignal`` returns."""


class SignalStop:
    """Installs the handlers on the running loop for the ``with`` block; see the module doc."""

    def __init__(self, cancel: asyncio.Event) -> None:
        self.cancel = cancel
        self.signum: int | None = None
        """The first stop signal received, if any."""
        self._opening: asyncio.Task[object] | None = asyncio.current_task()
        self._cut_opening = False
        self._previous: dict[int, Handler] = {}

    def __enter__(self) -> SignalStop:
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            self._previous[signum] = signal.getsignal(signum)
            loop.add_signal_handler(signum, self._received, signum)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)  # this sets the default disposition
            previous = self._previous.pop(signum, None)
            if previous is not None:
                signal.signal(signum, previous)

    def prompting(self) -> None:
        """From now on a signal cancels the prompt (through ``cancel``), not the task."""
        self._opening = None

    def _received(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
        self.cancel.set()
        if self._opening is not None:  # once: a second signal must not cut the clean-up short
            self._opening.cancel()
            self._opening, self._cut_opening = None, True

    def exit_code(self, code: int) -> int:
        """``code`` (from the run's stop reason), with a cancellation by SIGTERM made 143."""
        if code == exit_codes.CANCELLED and self.signum is not None:
            return exit_codes.for_signal(self.signum)
        return code

    def stopped_while_opening(self) -> int | None:
        """The exit code when a signal cancelled the opening, else None (a real cancellation)."""
        task = asyncio.current_task()
        if not self._cut_opening or self.signum is None or task is None:
            return None
        task.uncancel()
        return exit_codes.for_signal(self.signum)
