"""``Collector``: young collections (the loop's own, and CPython's) freeze their survivors, a
full collection comes once the frozen objects may have doubled what the last one kept, and it
finds the cycles that died frozen."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from openheim.server.collector import HOLD, MIN_GROWTH, Collector


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collector() -> Iterator[Collector]:
    saved = gc.get_threshold()
    made = Collector(young=1000)
    made.start()
    try:
        yield made
    finally:
        made.stop()
        assert gc.get_threshold() == saved


def _cycle() -> _Node:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return a


def test_young_collections_freeze_what_survives(collector: Collector) -> None:
    assert gc.get_threshold()[0] == 1000
    frozen = gc.get_freeze_count()
    kept = [_Node() for _ in range(3000)]
    gc.collect(0)
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_count()[1] == 0  # nothing left in the older generations to walk again
    assert len(gc.get_objects()) < len(kept)


def test_a_cycle_that_dies_frozen_is_found_by_the_next_full_collection(
    collector: Collector,
) -> None:
    alive: _Node | None = _cycle()
    dead = weakref.ref(alive)
    gc.collect(0)  # frozen while alive: a young collection never sees it again
    alive = None
    gc.collect(0)
    assert dead() is not None
    collector.collect()
    assert dead() is None
    assert not collector.due


def test_a_full_collection_is_due_once_the_heap_has_grown_enough(collector: Collector) -> None:
    collector.collect()
    assert collector.limit >= sys.getallocatedblocks() + MIN_GROWTH
    collector.limit = sys.getallocatedblocks() + 5000
    first = [_Node() for _ in range(1000)]
    assert not collector.check_growth()
    second = [_Node() for _ in range(5000)]
    assert collector.check_growth()
    frozen = gc.get_freeze_count()
    kept = _cycle()
    gc.collect(0)  # due: young collections go on freezing until the full one runs
    assert gc.get_freeze_count() >= frozen + 2
    assert kept.other is not None and len(first) + len(second) == 6000


async def test_the_loop_runs_young_collections_while_prompts_run() -> None:
    made = Collector(young=1_000_000)  # CPython's own young collections never come here
    busy = [True]
    task = asyncio.create_task(made.run(lambda: busy[0], check=60, tick=0.001))
    try:
        for _ in range(100):
            await asyncio.sleep(0)
        assert made.full_collections == 1
        frozen = gc.get_freeze_count()
        kept = [_Node() for _ in range(500)]
        for _ in range(500):  # at most 5 s
            if gc.get_freeze_count() >= frozen + len(kept):
                break
            await asyncio.sleep(0.01)
        assert gc.get_freeze_count() >= frozen + len(kept)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert made._collected not in gc.callbacks


async def test_run_collects_when_due_and_gives_the_pacing_back() -> None:
    saved = gc.get_threshold()
    made = Collector(young=1000)
    busy = [True]
    task = asyncio.create_task(made.run(lambda: busy[0], check=0.001, tick=0.001))
    for _ in range(100):
        await asyncio.sleep(0)
    assert gc.get_threshold()[0] == 1000 and made.full_collections == 1
    made.due_since = made.clock()  # due, but prompts run: it waits for a quiet moment
    for _ in range(20):
        await asyncio.sleep(0.001)
    assert made.full_collections == 1
    busy[0] = False
    for _ in range(200):
        if made.full_collections == 2:
            break
        await asyncio.sleep(0.001)
    assert made.full_collections == 2
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert gc.get_threshold() == saved and made._collected not in gc.callbacks


def test_a_due_collection_waits_for_quiet_until_the_heap_grows_far_past_due() -> None:
    held = [100 * 1024 * 1024]
    made = Collector(min_resident=32 * 1024 * 1024, measure=lambda: held[0])
    made.limit = made.force_limit = sys.getallocatedblocks() + 10_000_000
    made.resident_limit, made.resident_force = held[0] + (32 << 20), held[0] + (128 << 20)
    assert not made.ready(busy=False)  # not due
    held[0] += 32 << 20
    assert made.check_growth()
    assert made.ready(busy=False) and not made.ready(busy=True)
    held[0] += (96 << 20) - 1
    assert not made.ready(busy=True)  # however long it has waited
    held[0] += 1
    assert made.ready(busy=True)
    blocks = sys.getallocatedblocks()
    held[0] = 0
    made.force_limit = blocks + 5000
    grown = [_Node() for _ in range(6000)]  # the block count grown far past due does it too
    assert made.ready(busy=True) and len(grown) == 6000


def test_a_full_collection_sets_how_far_the_heap_may_grow_before_it_is_forced() -> None:
    held = [100 * 1024 * 1024]
    made = Collector(min_resident=32 * 1024 * 1024, measure=lambda: held[0])
    made.collect()
    blocks = sys.getallocatedblocks()
    assert made.force_limit - made.limit >= HOLD * MIN_GROWTH - 1000
    assert made.force_limit >= blocks + (1 + HOLD) * MIN_GROWTH - 1000
    step = made.resident_limit - held[0]
    assert step == 100 * 1024 * 1024  # growth 1.0: the heap may double before one is due
    assert made.resident_force == held[0] + (1 + HOLD) * step


def test_cycles_holding_large_buffers_that_die_frozen_make_a_full_collection_due() -> None:
    """Large buffers are not the interpreter's small blocks: cycles that die frozen while
    holding them grow the process's resident memory, not its block count. That growth makes a
    full collection due too, which frees them."""
    held = [100 * 1024 * 1024]
    made = Collector(young=1000, growth=0.0, min_resident=32 * 1024 * 1024, measure=lambda: held[0])
    made.start()
    try:
        refs = []
        for _ in range(64):
            alive = _cycle()
            alive.payload = bytes(1024 * 1024)  # type: ignore[attr-defined]
            gc.collect(0)  # frozen while alive
            refs.append(weakref.ref(alive))
            del alive
            held[0] += 1024 * 1024  # the buffer is resident memory, not a block of the count
        due = made.check_growth()
        if due:
            made.collect()
        left = sum(ref() is not None for ref in refs)
    finally:
        made.stop()
    assert due
    assert left == 0
