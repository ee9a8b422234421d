"""``StartGate``: prompts of the server begin a few at a time, between quick turns of the
event loop, so that a burst of new prompts does not hold back the frames of running streams."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

START_PER_TURN = 2
"""Prompts that may begin in one turn of the event loop (see ``StartGate``)."""
BUSY_TURN = 0.002
"""Seconds a turn of the event loop may take for prompts to begin after it."""
MAX_HOLD = 0.01
"""Seconds prompts wait at most for a quiet turn before a few begin anyway."""


class StartGate:
    """Lets prompts begin a few at a time, and only between quick turns of the event loop.

    Beginning a prompt costs a few milliseconds of the loop's time (its request, its
    connection, its records, its first events); a thousand begun at once would hold every
    running stream's next frame back for seconds. So waiting prompts go in arrival order, at
    most ``per_turn`` in a turn, and none while the loop is busy: when the last turn took over
    ``busy_turn`` seconds (the streams already running and the prompts just begun have work
    queued), the gate waits for a quicker one, but never more than ``max_hold`` seconds. Under
    a burst of new prompts, the streams keep their pace and the new prompts queue here."""

    def __init__(
        self,
        per_turn: int = START_PER_TURN,
        busy_turn: float = BUSY_TURN,
        max_hold: float = MAX_HOLD,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.per_turn = per_turn
        self.busy_turn = busy_turn
        self.max_hold = max_hold
        self.clock = clock
        self.waiting: deque[asyncio.Future[None]] = deque()
        self._planned = False
        self._asked = 0.0
        self._last_let = clock()

    async def wait(self) -> None:
        """Return in a turn with room for this prompt."""
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        self._plan()
        await turn

    def _plan(self) -> None:
        if not self._planned:
            self._planned = True
            self._asked = self.clock()
            asyncio.get_running_loop().call_soon(self.open)

    def open(self) -> None:
        """Let the next waiting prompts begin if the turn just ended was quick (called once
        per turn while prompts wait)."""
        self._planned = False
        now = self.clock()
        quick = now - self._asked <= self.busy_turn or now - self._last_let >= self.max_hold
        let = 0
        while quick and self.waiting and let < self.per_turn:
            turn = self.waiting.popleft()
            if not turn.done():  # a prompt whose task was cancelled meanwhile takes no room
                turn.set_result(None)
                let += 1
        if let:
            self._last_let = now
        if self.waiting:
            self._plan()
