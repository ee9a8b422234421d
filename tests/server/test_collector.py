"""``Collector``: young collections freeze their survivors, a full collection comes once they
may have doubled what the last one kept, and it finds the cycles that died frozen."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from openheim.server.collector import HOLD, MIN_YOUNG, Collector


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
    assert collector.since_full >= 1  # this one, and those the 3000 objects brought on
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_count()[1] == 0  # nothing left in the older generations to walk again


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
    assert collector.since_full == 0


def test_a_full_collection_is_due_after_the_budget_of_young_ones(collector: Collector) -> None:
    collector.collect()
    assert collector.budget >= MIN_YOUNG
    for _ in range(collector.budget - 1):
        gc.collect(0)
    assert not collector.due
    frozen = gc.get_freeze_count()
    gc.collect(0)
    assert collector.since_full == collector.budget  # due now
    kept = _cycle()
    gc.collect(0)  # due: survivors stay where the collector finds them
    assert gc.get_freeze_count() == frozen
    assert kept.other is not None


async def test_run_collects_when_due_and_gives_the_pacing_back() -> None:
    saved = gc.get_threshold()
    made = Collector(young=1000)
    busy = [True]
    task = asyncio.create_task(made.run(lambda: busy[0], check=0.001))
    for _ in range(100):
        await asyncio.sleep(0)
    assert gc.get_threshold()[0] == 1000 and made.full_collections == 1
    made.since_full = made.budget  # due, but prompts run: it waits for a quiet moment
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


def test_a_due_collection_waits_for_quiet_but_not_forever() -> None:
    made = Collector()
    made.budget = 10
    made.since_full = 10
    assert made.ready(busy=False) and not made.ready(busy=True)
    made.since_full = 10 * HOLD
    assert made.ready(busy=True)
