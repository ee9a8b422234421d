"""Prompting a ``Session``: runs and results, custom tools and cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openheim.api import PromptResult, PromptRun
from openheim.events import Event, IterationStart, SessionStarted, TextDelta, ToolCall
from openheim.messages import Message, ToolResultBlock, Usage
from openheim.store import SessionBusy
from openheim.testing import Reply, tool_call
from tests.api.conftest import MODEL, Blocker, MakeRuntime, Scripted
from tests.api.support import add, busy, finished, results, soon, tool_answer, touch

# --- prompting --------------------------------------------------------------------------------


async def test_iterating_a_prompt_yields_events_ending_with_finished(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(Reply(chunks=["Hel", "lo"], usage=Usage(7, 3)), "again")
    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        assert isinstance(run, PromptRun)
        assert scripted.requests == []  # nothing runs before the run is iterated
        events = [event async for event in run]
        again = [event async for event in session.prompt("and again")]
    started = events[0]
    assert isinstance(started, SessionStarted)  # the first prompt says which session runs
    assert (started.session_id, started.model, started.messages) == (session.id, MODEL, 0)
    assert not started.resumed
    assert isinstance(events[1], IterationStart)  # a fresh data dir: no notice
    assert isinstance(again[0], IterationStart)  # later prompts: their own events only
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    done = finished(events)
    assert (done.stop_reason, done.text, done.usage) == ("end_turn", "Hello", Usage(7, 3))
    request = scripted.requests[0]
    assert request.model == MODEL
    assert request.messages[-1] == Message.user("hi")
    scripted.provider.assert_done()


async def test_awaiting_a_prompt_returns_its_result(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("add", {"a": 2, "b": 3})], usage=Usage(10, 4)),
        Reply("The sum is 5.", usage=Usage(20, 6)),
    )
    async with await make_runtime(tools=[add]).new_session() as session:
        result = await session.prompt("what is 2 + 3?")
        history = list(session.history)
    assert isinstance(result, PromptResult)
    assert (result.text, result.stop_reason, result.reason) == (
        "The sum is 5.",
        "end_turn",
        "end_turn",
    )
    assert result.usage == Usage(30, 10)
    done = finished(result.events)
    assert (done.text, done.usage) == (result.text, result.usage)
    assert [r.content for r in results(result.events)] == ["5"]
    assert history[0] == Message.user("what is 2 + 3?")
    assert history[-1] == Message.assistant("The sum is 5.")


async def test_result_method_matches_awaiting(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("one", "two")
    async with await make_runtime().new_session() as session:
        first = await session.prompt("a").result()
        second = await session.prompt(Message.user("b"))
    assert (first.text, second.text) == ("one", "two")
    assert scripted.requests[1].messages[-1] == Message.user("b")
    assert len(scripted.requests[1].messages) == 3  # a, one, b: the history carries over


async def test_a_prompt_run_runs_once(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    scripted.provider.add("only once")
    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        assert (await run).text == "only once"
        with pytest.raises(RuntimeError, match="runs once"):
            await run
        with pytest.raises(RuntimeError, match="runs once"):
            [event async for event in run]
        assert not busy(session)
        assert len(session.history) == 2
    assert len(scripted.requests) == 1


async def test_a_second_concurrent_prompt_is_refused(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("block", {"label": "one"})]), "first done", "second done"
    )
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        first = asyncio.create_task(session.prompt("one").result())
        await soon(blocker.started.wait())
        assert busy(session)
        before = list(session.history)
        with pytest.raises(SessionBusy) as refused:
            await session.prompt("two")
        assert refused.value.session_id == session.id
        assert session.history == before  # the refused prompt left no trace
        assert busy(session)  # and did not release the running one
        blocker.release.set()
        assert (await soon(first)).text == "first done"
        assert not busy(session)
        assert (await session.prompt("two")).text == "second done"
    assert blocker.finished == ["one"]


async def test_custom_tools_are_offered_and_their_results_reach_the_model(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    call = tool_call("add", {"a": 40, "b": 2})
    scripted.provider.add(Reply(tool_calls=[call]), "42")
    runtime = make_runtime(tools=[add])
    async with await runtime.new_session() as session:
        result = await session.prompt("add")
    specs = {spec.name: spec for spec in scripted.requests[0].tools}
    assert "add" in specs
    assert specs["add"].description == "Add two whole numbers."
    params = specs["add"].parameters
    assert set(params["properties"]) == {"a", "b"}
    assert params["properties"]["a"]["type"] == "integer"
    assert tool_answer(scripted.requests[1].messages[-1]) == ToolResultBlock(call.id, "42", False)
    assert [(r.name, r.status) for r in results(result.events)] == [("add", "completed")]


async def test_add_tool_offers_it_to_sessions_opened_later(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("before", "after")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    runtime.add_tool(add)
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    assert "add" not in scripted.tool_names(0)
    assert "add" in scripted.tool_names(1)


async def test_a_mutating_custom_tool_runs_in_auto_mode(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("touch", {"name": "made.txt"})]), "ok")
    runtime = make_runtime(tools=[touch], approval="auto")
    async with await runtime.new_session() as session:
        result = await session.prompt("touch")
    assert [r.status for r in results(result.events)] == ["completed"]
    assert (work / "made.txt").is_file()


async def test_a_mutating_tool_without_anyone_to_ask_is_denied(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("touch", {"name": "made.txt"})]), "ok")
    async with await make_runtime(tools=[touch]).new_session() as session:
        result = await session.prompt("touch")
    assert [r.status for r in results(result.events)] == ["denied"]
    assert finished(result.events).denied == 1
    assert not (work / "made.txt").exists()


# --- cancel -----------------------------------------------------------------------------------


async def test_cancel_ends_a_running_prompt(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    call = tool_call("block", {"label": "stuck"})
    scripted.provider.add(Reply(tool_calls=[call]), "after cancel")
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        run = asyncio.create_task(session.prompt("go").result())
        await soon(blocker.started.wait())
        session.cancel()
        result = await soon(run)
        assert (result.stop_reason, result.reason) == ("cancelled", "user_cancelled")
        assert blocker.cancelled == ["stuck"]
        assert blocker.finished == []
        assert [r.status for r in results(result.events)] == ["cancelled"]
        assert not busy(session)
        # the history stays valid: every call has its answer, and the session goes on
        assert tool_answer(session.history[-1]).tool_use_id == call.id
        assert (await session.prompt("again")).text == "after cancel"
    assert len(scripted.requests) == 2


async def test_cancel_while_iterating(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    seen: list[Event] = []
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        async for event in session.prompt("go"):
            seen.append(event)
            if isinstance(event, ToolCall):
                session.cancel()
    assert finished(seen).stop_reason == "cancelled"
    assert not blocker.finished


async def test_cancel_without_a_running_prompt_does_nothing(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("fine")
    async with await make_runtime().new_session() as session:
        session.cancel()
        result = await session.prompt("hi")
    assert result.stop_reason == "end_turn"


async def test_prompt_run_cancel_ends_only_that_run(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        run = session.prompt("go")
        task = asyncio.create_task(run.result())
        await soon(blocker.started.wait())
        run.cancel()
        assert (await soon(task)).stop_reason == "cancelled"
    assert blocker.cancelled == ["x"]


async def test_a_run_cancelled_before_it_starts_never_calls_the_model(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("unused")
    async with await make_runtime().new_session() as session:
        run = session.prompt("go")
        run.cancel()
        result = await soon(run)
        assert result.stop_reason == "cancelled"
        assert not busy(session)
    assert scripted.requests == []
