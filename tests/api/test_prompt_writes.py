"""A prompt's messages are stored by the store's writing thread while the prompt goes on, and
its reader never sees an event that follows a message before that message is stored."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from openheim.errors import StoreError
from openheim.events import CostUpdate, Event, Finished
from openheim.messages import Message
from openheim.runtime import store_writes
from openheim.runtime.history import PersistentHistory
from openheim.store.sqlite import SQLiteLease
from openheim.testing import Reply, tool_call
from tests.api.conftest import Blocker, MakeRuntime, Scripted

WAIT = 10.0
SPINS = 100
"""Turns of the event loop given to a prompt that must not go on meanwhile."""


async def test_no_event_after_a_message_is_seen_before_it_is_stored(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None
    entered, go_on = threading.Event(), threading.Event()
    append = store.append

    def held(session_id: str, message: Message) -> None:
        if message.role == "assistant":
            entered.set()
            assert go_on.wait(WAIT)
        append(session_id, message)

    store.append = held  # type: ignore[method-assign]
    scripted.provider.add("the answer")
    seen: list[Event] = []

    async def read() -> None:
        async for event in session.prompt("hi"):
            seen.append(event)

    reading = asyncio.create_task(read())
    assert await asyncio.to_thread(entered.wait, WAIT)
    for _ in range(SPINS):
        await asyncio.sleep(0)
    assert not any(isinstance(e, CostUpdate | Finished) for e in seen)
    go_on.set()
    await asyncio.wait_for(reading, WAIT)
    assert isinstance(seen[-1], Finished)
    assert [m.role for m in store.messages(str(session.id))] == ["user", "assistant"]
    await session.close()


async def test_a_message_that_cannot_be_stored_fails_the_prompt(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None
    append = store.append

    def failing(session_id: str, message: Message) -> None:
        if message.role == "assistant":
            raise StoreError("the disk is full", hint="free some space")
        append(session_id, message)

    store.append = failing  # type: ignore[method-assign]
    scripted.provider.add("the answer")
    with pytest.raises(StoreError, match="disk is full"):
        await session.prompt("hi")
    store.append = append  # type: ignore[method-assign]
    assert [m.role for m in store.messages(str(session.id))] == ["user"]
    scripted.provider.add("again")
    result: Any = await session.prompt("once more")  # the lease was given back
    assert result.text == "again"
    await session.close()


async def test_when_finished_is_seen_the_lease_is_given_back_and_the_totals_stored(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None and session.id is not None
    scripted.provider.add("the answer")
    checked = False
    async for event in session.prompt("hi"):
        if isinstance(event, Finished):
            store.acquire(session.id).release()  # no SessionBusy: the prompt's lease is back
            assert store.get(session.id).usage == session.agent.meter.usage
            checked = True
    assert checked
    await session.close()


async def test_a_prompt_whose_message_cannot_be_stored_leaves_the_history_as_between_prompts(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    store, history = session.store, session.history
    assert store is not None and isinstance(history, PersistentHistory)
    append = store.append

    def failing(session_id: str, message: Message) -> None:
        raise StoreError("the disk is full", hint="free some space")

    store.append = failing  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="disk is full"):
        await session.prompt("hi")
    assert not history.deferred and scripted.requests == []
    store.append = append  # type: ignore[method-assign]
    scripted.provider.add("fine")
    assert (await session.prompt("again")).text == "fine"
    await session.close()


async def test_the_lease_is_refreshed_while_a_tool_runs_long_off_the_event_loop(
    scripted: Scripted,
    make_runtime: MakeRuntime,
    blocker: Blocker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_writes, "REFRESH", 0.01)
    refreshed: list[str] = []
    refresh = SQLiteLease.refresh

    def counted(lease: SQLiteLease) -> None:
        refreshed.append(threading.current_thread().name)
        refresh(lease)

    monkeypatch.setattr(SQLiteLease, "refresh", counted)
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]), "done")
    session = await make_runtime(tools=[blocker.tool]).new_session()
    run = asyncio.create_task(session.prompt("go").result())
    await asyncio.wait_for(blocker.started.wait(), WAIT)
    during = len(refreshed)
    for _ in range(1000):  # the tool runs on, with no model call: at most 10 s
        if len(refreshed) >= during + 3:
            break
        await asyncio.sleep(0.01)
    assert len(refreshed) >= during + 3
    assert threading.main_thread().name not in refreshed  # a refresh never stops the loop
    blocker.release.set()
    assert (await asyncio.wait_for(run, WAIT)).stop_reason == "end_turn"
    after = len(refreshed)
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert len(refreshed) == after  # the timer stops with the prompt
    await session.close()


async def test_the_lease_is_given_back_when_the_totals_cannot_be_stored(
    scripted: Scripted, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    session = await make_runtime().new_session()
    store = session.store
    assert store is not None and session.id is not None
    update = store.update

    def failing(session_id: str, **fields: Any) -> None:
        if "usage" in fields:
            raise StoreError("the disk is full")
        update(session_id, **fields)

    store.update = failing  # type: ignore[method-assign]
    scripted.provider.add("the answer")
    result = await asyncio.wait_for(session.prompt("hi").result(), WAIT)
    assert result.stop_reason == "end_turn"
    assert "usage totals" in caplog.text
    with store.acquire(str(session.id)):  # free again: no second prompt waits for a timeout
        pass
    await session.close()
