"""``StartGate``: at most a few prompts begin per turn of the event loop, in arrival order; a
prompt cancelled while it waits at the gate ends as cancelled without calling the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openheim.messages import Message
from openheim.runtime import SessionOptions
from openheim.server.start_gate import StartGate
from openheim.testing import FakeLLMServer
from tests.server.support import hub_over

WAIT = 10.0


async def test_a_few_begin_per_turn_in_arrival_order() -> None:
    gate = StartGate(per_turn=2)
    begun: list[int] = []

    async def prompt(index: int) -> None:
        await gate.wait()
        begun.append(index)

    tasks = [asyncio.create_task(prompt(i)) for i in range(5)]
    await asyncio.sleep(0)  # every prompt waits at the gate now
    assert len(gate.waiting) == 5
    turns: list[int] = []
    while len(begun) < 5 and len(turns) < 20:
        await asyncio.sleep(0)
        turns.append(len(begun))
    assert begun == [0, 1, 2, 3, 4]
    assert all(b - a <= 2 for a, b in zip([0, *turns], turns, strict=False)), turns
    await asyncio.gather(*tasks)


async def test_a_cancelled_waiter_takes_no_room() -> None:
    gate = StartGate(per_turn=1)
    first = asyncio.create_task(gate.wait())
    second = asyncio.create_task(gate.wait())
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.wait_for(second, WAIT)
    assert first.cancelled()


async def test_a_prompt_cancelled_at_the_gate_ends_cancelled(home: Path, work: Path) -> None:
    with FakeLLMServer([]) as llm:
        async with hub_over(home, work, llm) as hub:
            hub.gate = StartGate(per_turn=0)  # shut: nothing begins until the test lets it
            live = await hub.open(SessionOptions())
            seen: list[str] = []
            live.subscribers.add(_Collect(seen))
            await live.start(Message.user("hi"))
            await asyncio.sleep(0)
            assert live.busy and len(hub.gate.waiting) == 1
            live.cancel()
            hub.gate.per_turn = 1
            hub.gate.open()
            assert live.task is not None
            await asyncio.wait_for(live.task, WAIT)
        assert llm.requests == [] and llm.unexpected_requests == []
    assert '"stop_reason": "cancelled"' in seen[-1]


class _Collect:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def push(self, frame: str) -> None:
        self.seen.append(frame)

    def replay(self, frames: list[str]) -> None:
        self.seen.extend(frames)
