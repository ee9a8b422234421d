"""A stored session's prompt takes its lease and stores its messages and totals off the event
loop, and a prompt cancelled while its lease is being taken leaves no lease behind."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from openheim.errors import SessionBusy
from openheim.store.base import Lease
from tests.api.conftest import MakeRuntime, Scripted

WAIT = 10.0


async def test_the_prompts_store_writes_run_off_the_loop(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None
    threads: list[str] = []

    def noted(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            threads.append(f"{name} {threading.current_thread().name}")
            return call(*args, **kwargs)

        return run

    store.acquire = noted("acquire", store.acquire)  # type: ignore[method-assign]
    store.append = noted("append", store.append)  # type: ignore[method-assign]
    store.update = noted("update", store.update)  # type: ignore[method-assign]
    scripted.provider.add("done")
    await session.prompt("hi")
    assert [t.split()[0] for t in threads] == ["acquire", "append", "append", "update"]
    assert all(t.split()[1] != threading.main_thread().name for t in threads), threads
    assert [m.role for m in store.messages(str(session.id))] == ["user", "assistant"]
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
