"""``Collector``: garbage collection paced for a server that keeps many sessions open.

CPython's collector walks every object that survived earlier collections again and again: a
server holding a thousand sessions (several hundred thousand objects) stopped its event loop
for 100 to 450 ms at each full collection, and for tens of milliseconds at many smaller ones,
which is most of the slowest frames' delay. Objects that survive a young collection here are
sessions, their tools and histories, and the prompts running; they mostly live on, and the
ones that die are freed by reference counting whatever their generation. So after each young
collection the survivors are frozen (``gc.freeze``: the collector stops walking them), and
each collection walks only what was made since the last one.

What freezing gives up is finding reference cycles among frozen objects that die later. So
once the young collections since the last full one may have frozen as many objects as that one
kept (``growth``), a full collection is due (everything thawed, collected, frozen again). It
runs at the next check when no prompt is running; while prompts run (a full collection of a
large heap stops every stream for a few hundred milliseconds) it waits, up to ``HOLD`` times
that growth. The memory a server may hold in such cycles stays within that bound, and full
collections come as rarely as the live heap allows, at quiet moments where there are any.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

YOUNG = 10_000
"""Objects made (net) between two young collections: fewer, larger collections than
CPython's 700, each still walking only new objects."""
GROWTH = 1.0
"""Frozen objects, as a share of those a full collection kept, that bring the next one."""
CHECK = 1.0
"""Seconds between checks for a due full collection."""
MIN_YOUNG = 10
"""Young collections between two full ones at the least."""
HOLD = 3
"""How far past due a full collection waits for a moment when no prompt runs."""


class Collector:
    """Freezes what young collections leave and runs a full collection when due (``run``)."""

    def __init__(self, young: int = YOUNG, growth: float = GROWTH) -> None:
        self.young = young
        self.growth = growth
        self.since_full = 0
        self.budget = MIN_YOUNG
        self.full_collections = 0
        self._saved: tuple[int, int, int] | None = None

    @property
    def due(self) -> bool:
        return self.since_full >= self.budget

    def ready(self, busy: bool) -> bool:
        """Whether to collect now: due and quiet, or far past due."""
        return self.since_full >= self.budget * (HOLD if busy else 1)

    def start(self) -> None:
        """Take over the process's collection pacing (``stop`` gives it back)."""
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        gc.set_threshold(self.young, self._saved[1], self._saved[2])
        gc.callbacks.append(self._collected)
        self.collect()

    def stop(self) -> None:
        if self._saved is None:
            return
        gc.callbacks.remove(self._collected)
        gc.set_threshold(*self._saved)
        gc.unfreeze()  # the objects frozen here are the collector's again
        self._saved = None

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        """A gc callback: after a young collection, freeze its survivors unless a full
        collection is due (then they stay where the collector can find their cycles)."""
        if phase != "stop" or info.get("generation", 0) >= 2:
            return
        self.since_full += 1
        if not self.due:
            gc.freeze()

    def collect(self) -> None:
        """A full collection of everything, frozen objects included; what it keeps is frozen
        again and sets the budget of young collections until the next one."""
        began = time.perf_counter()
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        kept = gc.get_freeze_count()
        self.since_full = 0
        self.budget = max(MIN_YOUNG, int(kept * self.growth / self.young))
        self.full_collections += 1
        log.debug(
            "full collection: %d freed, %d kept, %.1f ms",
            freed,
            kept,
            (time.perf_counter() - began) * 1000,
        )

    async def run(self, busy: Callable[[], bool], check: float = CHECK) -> None:
        """Run full collections when ``ready`` (``busy``: whether a prompt runs now), until
        cancelled."""
        self.start()
        try:
            while True:
                await asyncio.sleep(check)
                if self.due and self.ready(busy()):
                    self.collect()
        finally:
            self.stop()
