"""``Collector``: garbage collection paced for a server that keeps many sessions open.

CPython's collector walks every object that survived earlier collections again and again: a
server holding a thousand sessions (several hundred thousand objects) stopped its event loop
for 100 to 450 ms at each full collection. Objects that survive a young collection here are
sessions, their tools and histories, and the prompts running; they mostly live on, and the
ones that die are freed by reference counting whatever their generation. So after each young
collection the survivors are frozen (``gc.freeze``: the collector stops walking them), and
each collection walks only what was made since the last one.

Young collections are also run from the event loop, every ``TICK`` seconds while a prompt
runs. CPython starts one when allocations outnumber deallocations by its threshold, but every
streamed delta frees the suspended coroutine chain of its stream (made young by the delta
before) and makes a new one: the count barely moves while the young generation fills with the
chains of every open stream, and each collection then walked some 25,000 objects, 5 to 20 ms
of the loop's time at a thousand streams. A collection every ``TICK`` walks only what the
last ``TICK`` made: at a thousand streams, 0.1 ms at the median and 3 ms at the 99th
percentile (prompts beginning make the most), against 0.3 and 8 ms every 20 ms; the total
walked is the same, since a stream's chain is walked once whichever collection finds it.

What freezing gives up is finding reference cycles among frozen objects that die later. So
once the interpreter's allocated memory blocks (``sys.getallocatedblocks``, a fraction of a
millisecond to count) have grown by ``growth`` times what the last full collection left, a full
collection is due (everything thawed, collected, frozen again). Large strings and buffers are
not such blocks (a frozen cycle holding a megabyte counts a few), so the process's resident
memory (``/proc/self/statm`` where there is one) growing that much makes one due as well.
It runs at the next check when no prompt is running. While prompts run (a full collection of
a large heap stops every stream for a few hundred milliseconds) it waits, young collections
going on as before, until the heap has grown ``HOLD`` times as much again: much of the growth
that makes one due is live (the sessions and prompts a busy server holds), and a full
collection only finds cycles that died, so memory, not the time waited, says when it can wait
no longer. Full collections so come as rarely as the live heap allows, at quiet moments
where there are any.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

YOUNG = 10_000
"""CPython's threshold for its own young collections (its default is 700): with the loop's
collections every ``TICK``, these come only under a burst of allocations."""
TICK = 0.005
"""Seconds between the young collections run from the loop while a prompt runs."""
GROWTH = 1.0
"""Growth of the allocated blocks since the last full collection, as a share of what it left,
that makes the next one due."""
MIN_GROWTH = 200_000
"""Blocks of growth that make a full collection due at the least (a small heap grows fast)."""
MIN_RESIDENT = 256 * 1024 * 1024
"""Bytes of resident memory growth that make a full collection due at the least."""
CHECK = 1.0
"""Seconds between checks for a due full collection."""
HOLD = 3
"""How much more a due full collection lets the heap grow while prompts run, as a multiple of
the growth that made it due, before it runs anyway."""


class Collector:
    """Freezes what young collections leave and runs a full collection when due (``run``)."""

    def __init__(
        self,
        young: int = YOUNG,
        growth: float = GROWTH,
        clock: Callable[[], float] = time.monotonic,
        min_resident: int = MIN_RESIDENT,
        measure: Callable[[], int] | None = None,
    ) -> None:
        self.young = young
        self.growth = growth
        self.clock = clock
        self.min_resident = min_resident
        self.resident = measure or resident
        """The process's resident bytes now (``resident``; tests pass their own)."""
        self.limit = MIN_GROWTH
        """Allocated blocks that make the next full collection due."""
        self.force_limit = MIN_GROWTH * (1 + HOLD)
        """Allocated blocks that make a due full collection run while prompts run."""
        held = self.resident()
        self.resident_limit = held + min_resident
        """Resident bytes that make the next full collection due (where they can be read)."""
        self.resident_force = held + min_resident * (1 + HOLD)
        """Resident bytes that make a due full collection run while prompts run."""
        self.full_collections = 0
        self.last_full = clock()
        self.due_since: float | None = None
        self._saved: tuple[int, int, int] | None = None

    @property
    def due(self) -> bool:
        return self.due_since is not None

    def ready(self, busy: bool) -> bool:
        """Whether to collect now: due, and quiet or the heap grown far past due."""
        if self.due_since is None:
            return False
        return (
            not busy
            or sys.getallocatedblocks() >= self.force_limit
            or self.resident() >= self.resident_force
        )

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
        """A gc callback: after a young collection, freeze its survivors."""
        if phase == "stop" and info.get("generation", 0) < 2:
            gc.freeze()

    def check_growth(self) -> bool:
        """Whether a full collection is due, counting the allocated blocks now."""
        if self.due_since is None and (
            sys.getallocatedblocks() >= self.limit or self.resident() >= self.resident_limit
        ):
            self.due_since = self.clock()
        return self.due

    def collect(self) -> None:
        """A full collection of everything, frozen objects included; what it keeps is frozen
        again and sets how much may be frozen before the next one."""
        began = time.perf_counter()
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        kept = gc.get_freeze_count()
        blocks = sys.getallocatedblocks()
        step = max(MIN_GROWTH, int(blocks * self.growth))
        self.limit, self.force_limit = blocks + step, blocks + step * (1 + HOLD)
        held = self.resident()
        step = max(self.min_resident, int(held * self.growth))
        self.resident_limit, self.resident_force = held + step, held + step * (1 + HOLD)
        self.due_since = None
        self.last_full = self.clock()
        self.full_collections += 1
        log.debug(
            "full collection: %d freed, %d kept, %.1f ms",
            freed,
            kept,
            (time.perf_counter() - began) * 1000,
        )

    async def run(self, busy: Callable[[], bool], check: float = CHECK, tick: float = TICK) -> None:
        """Until cancelled: a young collection every ``tick`` while ``busy()`` (a prompt
        runs), and a full collection when ``ready``, looked for every ``check`` seconds."""
        self.start()
        try:
            next_check = self.clock() + check
            while True:
                running = busy()
                await asyncio.sleep(tick if running else check)
                if running:
                    gc.collect(0)
                if self.clock() >= next_check:
                    next_check = self.clock() + check
                    if self.check_growth() and self.ready(busy()):
                        self.collect()
        finally:
            self.stop()


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident() -> int:
    """The process's resident memory in bytes; 0 where ``/proc/self/statm`` cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
