"""``SessionHost``: a session kept open across uses under its key, closed when idle, retired
or when the host closes, and guarded while a use of it runs."""

from __future__ import annotations

import asyncio

import pytest

from openheim.errors import SessionBusy, SessionNotFound
from openheim.runtime import Session, SessionHost, SessionOptions
from tests.api.conftest import MakeRuntime, Scripted

WAIT = 5.0


def closed(session: Session) -> asyncio.Event:
    """An event set once ``session`` has closed."""
    done = asyncio.Event()
    session.on_close(lambda _: done.set())
    return done


async def test_uses_of_a_key_share_one_session(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    scripted.provider.add("one", "two")
    async with host.use("chat", SessionOptions()) as first:
        assert (await first.prompt("hi")).text == "one"
    async with host.use("chat", SessionOptions(resume=first.id)) as second:
        assert (await second.prompt("again")).text == "two"
    assert second is first and host.get("chat") is first
    async with host.use("other", SessionOptions()) as other:
        assert other is not first
    await host.aclose()
    assert host.get("chat") is None and host.get("other") is None


async def test_another_model_closes_the_open_session_and_resumes_it(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions()) as first:
        gone = closed(first)
    async with host.use("chat", SessionOptions(resume=first.id, model="other")) as second:
        assert second is not first and second.id == first.id and second.model == "other"
    async with asyncio.timeout(WAIT):
        await gone.wait()
    await host.aclose()


async def test_a_session_that_cannot_open_leaves_no_entry(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions()) as first:
        gone = closed(first)
    with pytest.raises(SessionNotFound):
        async with host.use("chat", SessionOptions(resume="no-such-session")):
            pass
    assert host.get("chat") is None
    async with asyncio.timeout(WAIT):
        await gone.wait()  # asked for another session: the open one was closed
    await host.aclose()


async def test_a_second_use_while_one_runs_is_refused(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions()) as session:
        with pytest.raises(SessionBusy):
            async with host.use("chat", SessionOptions()):
                pass
    async with host.use("chat", SessionOptions(resume=session.id)) as again:
        assert again is session  # the refusal closed nothing
    await host.aclose()


async def test_an_idle_session_is_closed(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    host = SessionHost(make_runtime(), idle_close=0.05)
    async with host.use("chat", SessionOptions()) as session:
        gone = closed(session)
        await asyncio.sleep(0.1)  # a use longer than idle_close: not idle while it runs
        assert not gone.is_set()
    async with asyncio.timeout(WAIT):
        await gone.wait()
    assert host.get("chat") is None
    async with host.use("chat", SessionOptions(resume=session.id)) as resumed:
        assert resumed is not session and resumed.id == session.id  # resumed from the store
    await host.aclose()


async def test_a_session_retired_in_use_closes_when_the_use_ends(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions()) as session:
        gone = closed(session)
        host.retire("chat")
        assert host.get("chat") is None
        scripted.provider.add("still here")
        assert (await session.prompt("hi")).text == "still here"
    async with asyncio.timeout(WAIT):
        await gone.wait()
    async with host.use("chat", SessionOptions()) as fresh:
        assert fresh is not session and fresh.id != session.id
    await host.aclose()
