"""A stored session's prompt takes its lease and stores its message off the event loop, and a
prompt cancelled while its lease is being taken leaves no lease behind."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openheim.errors import SessionBusy
from openheim.store.base import Lease
from tests.api.conftest import MakeRuntime, Scripted

WAIT = 10.0


async def test_the_start_writes_run_off_the_loop(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store, history = session.store, session.history
    assert store is not None
    threads: list[str] = []
    acquire, append = store.acquire, history.append

    def noted_acquire(session_id: str) -> Lease:
        threads.append("acquire " + threading.current_thread().name)
        return acquire(session_id)

    def noted_append(message: object) -> None:
        threads.append("append " + threading.current_thread().name)
        append(message)  # type: ignore[arg-type]

    store.acquire = noted_acquire  # type: ignore[method-assign]
    history.append = noted_append  # type: ignore[method-assign]
    scripted.provider.add("done")
    await session.prompt("hi")
    main = threading.main_thread().name
    starts = threads[:2]
    assert [t.split()[0] for t in starts] == ["acquire", "append"]
    assert all(t.split()[1] != main for t in starts), threads
    await session.close()


async def test_a_prompt_cancelled_while_taking_its_lease_gives_it_back(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None and session.id is not None
    entered, go_on, taken = threading.Event(), threading.Event(), threading.Event()
    acquire = store.acquire

    def slow(session_id: str) -> Lease:
        entered.set()
        assert go_on.wait(WAIT)
        try:
            return acquire(session_id)
        finally:
            taken.set()

    store.acquire = slow  # type: ignore[method-assign]
    task = asyncio.create_task(session.prompt("hi").result())
    assert await asyncio.to_thread(entered.wait, WAIT)
    task.cancel()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(taken.wait, WAIT)  # the cancelled prompt's lease is taken
    store.acquire = acquire  # type: ignore[method-assign]
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        try:
            lease = store.acquire(session.id)
            break
        except SessionBusy:
            assert asyncio.get_running_loop().time() < deadline, "the lease was never given back"
            await asyncio.sleep(0.01)
    lease.release()
    assert scripted.requests == []
    await session.close()
