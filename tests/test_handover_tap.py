"""``Handover.tap``: a delta emitted while the consumer waits with nothing queued goes to the
tap in the run's task; anything else, a delta the tap refuses, and a delta while events are
queued or the consumer is busy go through the queue, in order."""

from __future__ import annotations

import asyncio

from openheim.events import Event, Finished, IterationStart, TextDelta, ThinkingDelta
from openheim.handover import Closing, Handover


class Script:
    """A run that emits the given events, each after the test lets it (``step``)."""

    def __init__(self, handover: Handover, events: list[Event]) -> None:
        self.handover = handover
        self.events = events
        self.go: asyncio.Queue[None] = asyncio.Queue()

    async def work(self) -> Closing:
        for event in self.events:
            await self.go.get()
            await self.handover.emit(event)
        return [Finished("end_turn")]

    async def repair(self) -> Closing:
        return [Finished("cancelled")]


class Taps:
    """A tap that takes every delta but those whose text is in ``refuse``; ``taken`` lists them."""

    def __init__(self, *refuse: str) -> None:
        self.refuse = refuse
        self.taken: list[Event] = []

    def __call__(self, delta: TextDelta | ThinkingDelta) -> bool:
        if delta.text in self.refuse:
            return False
        self.taken.append(delta)
        return True


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_deltas_go_to_the_tap_only_while_the_consumer_waits() -> None:
    handover = Handover()
    handover.tap = tap = Taps()
    tapped = tap.taken
    script = Script(handover, [TextDelta("a"), ThinkingDelta("b"), IterationStart(2)])
    events = handover.run(script.work, script.repair)
    read: list[Event] = []
    reader = asyncio.create_task(read_all(events, read))
    await settle()
    script.go.put_nowait(None)
    script.go.put_nowait(None)
    await settle()
    assert tapped == [TextDelta("a"), ThinkingDelta("b")] and read == []
    script.go.put_nowait(None)  # not a delta: through the queue, as ever
    await asyncio.wait_for(reader, 5)
    assert tapped == [TextDelta("a"), ThinkingDelta("b")]
    assert read == [IterationStart(2), Finished("end_turn")]


async def test_a_refused_delta_and_one_behind_queued_events_go_through_the_queue() -> None:
    handover = Handover()
    handover.tap = tap = Taps("refused")
    tapped = tap.taken
    script = Script(handover, [TextDelta("refused"), TextDelta("behind"), TextDelta("alone")])
    events = handover.run(script.work, script.repair)
    first = asyncio.ensure_future(anext(events))
    await settle()
    script.go.put_nowait(None)  # refused by the tap: queued, and the reader is woken
    script.go.put_nowait(None)  # the reader has not taken "refused" yet: queued behind it
    await asyncio.wait_for(first, 5)
    assert first.result() == TextDelta("refused") and tapped == []
    second = await anext(events)  # queued before the reader came back
    assert second == TextDelta("behind")
    third = asyncio.ensure_future(anext(events))
    await settle()
    script.go.put_nowait(None)  # the reader waits and nothing is queued: tapped
    assert (await asyncio.wait_for(third, 5)) == Finished("end_turn")
    assert tapped == [TextDelta("alone")]


async def test_a_delta_while_the_consumer_is_busy_goes_through_the_queue() -> None:
    handover = Handover()
    handover.tap = tap = Taps("x")
    tapped = tap.taken
    script = Script(handover, [TextDelta("x"), TextDelta("a")])
    events = handover.run(script.work, script.repair)
    first = asyncio.ensure_future(anext(events))
    await settle()
    script.go.put_nowait(None)
    assert (await asyncio.wait_for(first, 5)) == TextDelta("x")
    script.go.put_nowait(None)  # the consumer has not asked for the next event: busy
    await settle()
    assert tapped == []
    assert (await anext(events)) == TextDelta("a")
    assert (await anext(events)) == Finished("end_turn")


async def read_all(events: object, into: list[Event]) -> None:
    assert hasattr(events, "__anext__")
    async for event in events:  # type: ignore[attr-defined]
        into.append(event)
