"""``SessionHost``: a session kept open across uses under its key, closed when idle, retired
or when the host closes, and guarded while a use of it runs."""

from __future__ import annotations

import asyncio

import pytest

from openheim.approval import ApprovalRequest, Ask, Deny
from openheim.errors import SessionBusy, SessionNotFound
from openheim.runtime import Session, SessionHost, SessionOptions
from tests.api.conftest import MakeRuntime, Scripted
from tests.api.support import results, write_call

WAIT = 5.0


async def refuse(request: ApprovalRequest, ask: Ask) -> Deny:
    return Deny("no one to ask")


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
    async with host.use("chat", SessionOptions(), resolver=refuse) as first:
        assert (await first.prompt("hi")).text == "one"
    async with host.use("chat", SessionOptions(resume=first.id), resolver=refuse) as second:
        assert (await second.prompt("again")).text == "two"
    assert second is first and host.get("chat") is first
    async with host.use("other", SessionOptions(), resolver=refuse) as other:
        assert other is not first
    await host.aclose()
    assert host.get("chat") is None and host.get("other") is None


async def test_another_model_closes_the_open_session_and_resumes_it(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions(), resolver=refuse) as first:
        gone = closed(first)
    async with host.use(
        "chat", SessionOptions(resume=first.id, model="other"), resolver=refuse
    ) as second:
        assert second is not first and second.id == first.id and second.model == "other"
    async with asyncio.timeout(WAIT):
        await gone.wait()
    await host.aclose()


async def test_a_session_that_cannot_open_leaves_no_entry(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions(), resolver=refuse) as first:
        gone = closed(first)
    with pytest.raises(SessionNotFound):
        async with host.use("chat", SessionOptions(resume="no-such-session"), resolver=refuse):
            pass
    assert host.get("chat") is None
    async with asyncio.timeout(WAIT):
        await gone.wait()  # asked for another session: the open one was closed
    await host.aclose()


async def test_a_second_use_while_one_runs_is_refused(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions(), resolver=refuse) as session:
        with pytest.raises(SessionBusy):
            async with host.use("chat", SessionOptions(), resolver=refuse):
                pass
    async with host.use("chat", SessionOptions(resume=session.id), resolver=refuse) as again:
        assert again is session  # the refusal closed nothing
    await host.aclose()


async def test_an_idle_session_is_closed(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    host = SessionHost(make_runtime(), idle_close=0.05)
    async with host.use("chat", SessionOptions(), resolver=refuse) as session:
        gone = closed(session)
        await asyncio.sleep(0.1)  # a use longer than idle_close: not idle while it runs
        assert not gone.is_set()
    async with asyncio.timeout(WAIT):
        await gone.wait()
    assert host.get("chat") is None
    async with host.use("chat", SessionOptions(resume=session.id), resolver=refuse) as resumed:
        assert resumed is not session and resumed.id == session.id  # resumed from the store
    await host.aclose()


async def test_a_session_retired_in_use_closes_when_the_use_ends(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions(), resolver=refuse) as session:
        gone = closed(session)
        host.retire("chat")
        assert host.get("chat") is None
        scripted.provider.add("still here")
        assert (await session.prompt("hi")).text == "still here"
    async with asyncio.timeout(WAIT):
        await gone.wait()
    async with host.use("chat", SessionOptions(), resolver=refuse) as fresh:
        assert fresh is not session and fresh.id != session.id
    await host.aclose()


async def test_each_use_settles_approvals_with_its_own_resolver(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime(approval="ask"))
    said: list[str] = []
    for who in ("first", "second"):

        async def resolver(request: ApprovalRequest, ask: Ask, who: str = who) -> Deny:
            said.append(who)
            return Deny(f"refused by the {who} use")

        scripted.provider.add(write_call(), "done")
        async with host.use("chat", SessionOptions(), resolver=resolver) as session:
            result = await session.prompt("write")
        assert results(result.events)[0].status == "denied"
    assert said == ["first", "second"]
    await host.aclose()


async def test_without_a_key_a_session_is_kept_under_its_id(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use(None, SessionOptions(), resolver=refuse) as first:
        assert first.id is not None
    assert host.get(first.id) is first
    async with host.use(None, SessionOptions(resume=first.id), resolver=refuse) as again:
        assert again is first
    gone = closed(first)
    async with host.use(None, SessionOptions(resume=first.id[:8]), resolver=refuse) as by_prefix:
        assert by_prefix is not first and by_prefix.id == first.id
    async with asyncio.timeout(WAIT):
        await gone.wait()  # one session open per stored session: the earlier one closed
    assert host.get(first.id) is by_prefix
    await host.aclose()


async def test_an_unsaved_session_without_a_key_closes_after_its_use(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime(save_sessions=False))
    async with host.use(None, SessionOptions(), resolver=refuse) as session:
        assert session.id is None
        gone = closed(session)
    async with asyncio.timeout(WAIT):
        await gone.wait()
    await host.aclose()


async def test_without_a_resolver_the_runtime_s_own_is_asked(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    asked: list[str] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return False

    host = SessionHost(make_runtime(approval=callback))
    scripted.provider.add(write_call(), "done")
    async with host.use("chat", SessionOptions(), resolver=None) as session:
        result = await session.prompt("write")
    assert asked == ["write_file"] and results(result.events)[0].status == "denied"
    async with host.use("chat", SessionOptions(), resolver=refuse) as other:
        assert other is not session  # a resolver of its own: another session
    await host.aclose()


async def test_closing_an_old_opening_leaves_the_newer_one_under_its_key(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    key, old = await host.open(None, SessionOptions(), resolver=refuse)
    assert key == old.id
    same, kept = await host.open(None, SessionOptions(resume=key), resolver=refuse, keep=True)
    assert (same, kept) == (key, old)  # open already: that one is the session
    _, newer = await host.open(None, SessionOptions(resume=key), resolver=refuse)
    assert newer is not old and host.get(key) is newer  # without keep: it replaces the old
    await host.close(key, old)
    assert host.get(key) is newer
    await host.close(key, newer)
    assert host.get(key) is None
    await host.aclose()


async def test_a_saved_session_is_not_taken_for_a_new_one(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    host = SessionHost(make_runtime())
    async with host.use("chat", SessionOptions(), resolver=refuse) as first:
        gone = closed(first)
    async with host.use("chat", SessionOptions(), resolver=refuse) as second:
        assert second is not first and second.id != first.id
    async with asyncio.timeout(WAIT):
        await gone.wait()
    await host.aclose()
