"""The hand-over between a run's task and its consumer: a rendezvous per event, except that up
to ``DELTA_LEAD`` text deltas may run ahead of the consumer."""

from __future__ import annotations

import asyncio

from openheim.events import Event, Finished, Notice, TextDelta
from openheim.handover import DELTA_LEAD, Closing, Handover


class _Work:
    """A run that emits ``deltas`` text deltas, then a notice, noting how far it got."""

    def __init__(self, handover: Handover, deltas: int) -> None:
        self.handover = handover
        self.deltas = deltas
        self.emitted = 0
        self.notice_done = False

    async def __call__(self) -> Closing:
        for i in range(self.deltas):
            await self.handover.emit(TextDelta(str(i)))
            self.emitted += 1
        await self.handover.emit(Notice("after the deltas"))
        self.notice_done = True
        return [Finished("end_turn")]

    async def repair(self) -> Closing:
        return [Finished("cancelled")]


async def _settle() -> None:
    """Let every ready task run until none has anything left to do (bounded)."""
    for _ in range(DELTA_LEAD * 4):
        await asyncio.sleep(0)


async def test_deltas_run_ahead_of_the_consumer_up_to_the_lead() -> None:
    handover = Handover()
    work = _Work(handover, DELTA_LEAD * 3)
    events = handover.run(work, work.repair)
    first = await anext(events)
    await _settle()
    assert first == TextDelta("0")
    # the run went on without the consumer, but no further than the lead allows
    assert DELTA_LEAD <= work.emitted <= DELTA_LEAD + 1
    rest: list[Event] = [event async for event in events]
    assert [e.text for e in rest if isinstance(e, TextDelta)] == [
        str(i) for i in range(1, DELTA_LEAD * 3)
    ]
    assert isinstance(rest[-2], Notice) and isinstance(rest[-1], Finished)


async def test_any_other_event_waits_until_the_consumer_asks_for_more() -> None:
    handover = Handover()
    work = _Work(handover, 3)
    events = handover.run(work, work.repair)
    seen = [await anext(events) for _ in range(4)]
    await _settle()
    assert isinstance(seen[-1], Notice)
    assert work.emitted == 3
    done_before = work.notice_done  # the consumer has not asked for the event after the notice
    assert isinstance(await anext(events), Finished)
    assert (done_before, work.notice_done) == (False, True)
    await events.aclose()
