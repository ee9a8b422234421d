"""A stored session closed and opened again goes on as one session: its frames numbered on where
they left off (though its last frames may not have reached the frame log yet), and the old
opening, closing late or idle, never takes the new one out of the server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openheim.runtime import SessionOptions
from openheim.testing import FakeLLMServer
from tests.server.support import hub_over


async def test_a_session_reopened_at_once_numbers_on(home: Path, work: Path) -> None:
    with FakeLLMServer([]) as llm:
        async with hub_over(home, work, llm) as hub:
            live = await hub.open(SessionOptions())
            key = live.key
            for n in range(3):
                live.publish("note", {"n": n})
            await hub.forget(key)
            again = await hub.open(SessionOptions(resume=key))
            seq = again.seq
            again.publish("note", {"n": 3})
            await hub.close_all()  # every frame in the log
            frames = list(hub.store.frames.after(key, 0))
    assert seq == 3
    assert [n for n, _ in frames] == [1, 2, 3, 4]
    assert [f'"n": {n}' in text for n, (_, text) in enumerate(frames)] == [True] * 4


async def test_a_session_resumed_while_its_last_opening_closes_stays_open(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([]) as llm:
        async with hub_over(home, work, llm) as hub:
            live = await hub.open(SessionOptions())
            key = live.key
            assert live.session is not None
            close, let_close = live.session.close, asyncio.Event()

            async def slow_close() -> None:
                await let_close.wait()
                await close()

            live.session.close = slow_close  # type: ignore[method-assign]
            closing = asyncio.create_task(hub.forget(key))
            await asyncio.sleep(0)  # the old opening is out of the hub and closing
            again = await hub.open(SessionOptions(resume=key))
            let_close.set()
            await closing
            found = hub.get(key)
    assert again is not live
    assert found is again


async def test_an_old_opening_s_idle_timer_leaves_the_new_opening_alone(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([]) as llm:
        async with hub_over(home, work, llm) as hub:
            hub.idle_close = 0.05
            live = await hub.open(SessionOptions())
            key = live.key
            live.watch_idle()  # as when its last client detached
            await hub.forget(key)  # closed by a client before it went idle
            again = await hub.open(SessionOptions(resume=key))
            again.subscribers.add(_Nobody())  # attached: the new opening is not idle
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while live._idle is not None and loop.time() < deadline:  # the old timer fires
                await asyncio.sleep(0.01)
            for _ in range(20):  # and anything it started runs
                await asyncio.sleep(0)
            found = hub.get(key)
    assert live._idle is None
    assert found is again


class _Nobody:
    def push(self, frame: str) -> None:
        pass

    def replay(self, frames: list[str]) -> None:
        pass
