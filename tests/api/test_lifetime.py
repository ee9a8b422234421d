"""``Session`` lifetime: closing (with and without a running prompt, from inside its own
loop) and sessions opened in one task and closed in another."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.api import Runtime, Session
from openheim.errors import ConfigError
from openheim.events import Event, SessionStarted, ToolCall
from openheim.messages import ToolResultBlock
from openheim.testing import Reply, tool_call
from tests.api.conftest import MODEL, Blocker, MakeRuntime, Scripted
from tests.api.support import busy, finished, results, soon, tool_answer
from tests.mcp.conftest import SERVER, tagged_pids

# --- closing ----------------------------------------------------------------------------------


async def test_a_closed_session_refuses_prompts(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    session = await make_runtime().new_session()
    await session.close()
    await session.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await session.prompt("hi")
    assert scripted.requests == []


async def test_runtime_aclose_closes_its_open_sessions(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    first, second = await runtime.new_session(), await runtime.new_session()
    closed_early = await runtime.new_session()
    await closed_early.close()
    await runtime.aclose()
    for session in (first, second, closed_early):
        with pytest.raises(RuntimeError, match="closed"):
            await session.prompt("hi")
    await runtime.aclose()  # nothing left to close
    assert scripted.requests == []


async def test_async_with_runtime_closes_its_sessions(
    scripted: Scripted, home: Path, work: Path
) -> None:
    async with Runtime(provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work) as rt:
        assert isinstance(rt, Runtime)
        session = await rt.new_session()
    with pytest.raises(RuntimeError, match="closed"):
        await session.prompt("hi")
    assert [r.id for r in rt.list_sessions()] == [session.id]


async def test_closing_a_session_ends_its_running_prompt(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    runtime = make_runtime(tools=[blocker.tool])
    session = await runtime.new_session()
    run = asyncio.create_task(session.prompt("go").result())
    await soon(blocker.started.wait())
    await soon(session.close())
    result = await soon(run)
    assert result.stop_reason == "cancelled"
    assert blocker.cancelled == ["x"]
    assert session.id is not None
    async with await runtime.resume_session(session.id) as resumed:
        assert tool_answer(resumed.history[-1]).is_error  # the cancelled call was answered


async def test_breaking_out_of_a_prompt_then_closing_leaves_a_valid_history(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    call = tool_call("block", {"label": "x"})
    scripted.provider.add(Reply("let me see", tool_calls=[call]), "resumed fine")
    runtime = make_runtime(tools=[blocker.tool])
    async with await runtime.new_session() as session:
        async for event in session.prompt("go"):
            if isinstance(event, ToolCall):
                break
    assert blocker.started.is_set() is False  # calls are announced before any runs
    assert session.id is not None
    async with await runtime.resume_session(session.id) as resumed:
        assert [m.role for m in resumed.history] == ["user", "assistant", "user"]
        assert tool_answer(resumed.history[-1]).tool_use_id == call.id
        assert (await resumed.prompt("again")).text == "resumed fine"


async def test_leaving_an_async_with_block_stops_the_prompt_and_frees_the_session(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]), "next answer")
    runtime = make_runtime(tools=[blocker.tool])
    session = await runtime.new_session()
    async with session.prompt("go") as events:
        async for event in events:
            if isinstance(event, ToolCall):
                break
    assert not session.busy
    assert not blocker.started.is_set()
    cancelled = session.history[-1].content[0]
    assert isinstance(cancelled, ToolResultBlock) and "cancelled" in cancelled.content
    assert (await session.prompt("again")).text == "next answer"


async def test_closing_a_session_from_inside_its_own_prompt_loop(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    """The consumer of a prompt closes the session between two events, through
    ``asyncio.wait_for`` (a task of its own on Python 3.11, the caller's task from 3.12 on):
    either way the loop still gets the prompt's last events, up to ``Finished``."""
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    runtime = make_runtime(tools=[blocker.tool])
    session = await runtime.new_session()
    seen: list[Event] = []
    async for event in session.prompt("go"):
        seen.append(event)
        if isinstance(event, ToolCall):
            await asyncio.wait_for(session.close(), timeout=2)
    assert finished(seen).stop_reason == "cancelled"
    assert [r.status for r in results(seen)] == ["cancelled"]
    assert not blocker.started.is_set()
    with pytest.raises(RuntimeError, match="closed"):
        await session.prompt("again")


async def test_closing_at_the_first_event_ends_the_prompt_before_any_model_call(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    """The news (``SessionStarted``, notices) comes before the run's own events, while the run
    waits for the reader: a close there still cancels the run and the loop gets ``Finished``."""
    session = await make_runtime().new_session()
    seen: list[Event] = []
    async for event in session.prompt("go"):
        seen.append(event)
        if isinstance(event, SessionStarted):
            await asyncio.wait_for(session.close(), timeout=2)
    assert isinstance(seen[0], SessionStarted)
    assert finished(seen).stop_reason == "cancelled"
    assert scripted.requests == []


async def test_closing_from_inside_the_loop_closes_before_it_returns_and_the_loop_ends(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]), "later")
    runtime = make_runtime(tools=[blocker.tool])
    session = await runtime.new_session()
    closed: list[Session] = []
    session.on_close(closed.append)
    seen: list[Event] = []
    closed_on_return: list[Session] = []
    async for event in session.prompt("go"):
        seen.append(event)
        if isinstance(event, ToolCall):
            await session.close()
            closed_on_return = list(closed)
    assert closed_on_return == [session]  # everything was closed before close() returned
    assert finished(seen).stop_reason == "cancelled"  # and the loop still got the end
    assert [r.status for r in results(seen)] == ["cancelled"]
    assert not blocker.started.is_set()
    assert session.id is not None
    async with await runtime.resume_session(session.id) as resumed:
        answer = resumed.history[-1].content[0]
        assert isinstance(answer, ToolResultBlock) and "cancelled" in answer.content
        assert (await resumed.prompt("again")).text == "later"


async def test_closing_while_another_task_sits_between_two_events_closes_at_once(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    runtime = make_runtime(tools=[blocker.tool])
    session = await runtime.new_session()
    closed: list[Session] = []
    session.on_close(closed.append)
    at_call, go_on = asyncio.Event(), asyncio.Event()

    async def read() -> list[Event]:
        seen: list[Event] = []
        async for event in session.prompt("go"):
            seen.append(event)
            if isinstance(event, ToolCall):
                at_call.set()
                await go_on.wait()  # the reader is busy with this event
        return seen

    reader = asyncio.create_task(read())
    await soon(at_call.wait())
    await soon(session.close())
    assert closed == [session] and not busy(session)
    go_on.set()
    seen = await soon(reader)
    assert finished(seen).stop_reason == "cancelled"
    assert [r.status for r in results(seen)] == ["cancelled"]


# --- sessions that cross tasks ----------------------------------------------------------------


async def test_a_session_opened_in_one_task_closes_in_another(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("from the test task")
    runtime = make_runtime()
    session = await soon(asyncio.create_task(runtime.new_session()))
    assert (await session.prompt("hi")).text == "from the test task"
    await soon(session.close())
    with pytest.raises(RuntimeError, match="closed"):
        await session.prompt("again")


async def test_a_session_opened_here_closes_from_another_task(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("one", "two")
    runtime = make_runtime()
    session = await runtime.new_session()
    await session.prompt("here")
    assert (await soon(asyncio.create_task(session.prompt("there").result()))).text == "two"
    await soon(asyncio.create_task(session.close()))
    assert [r.message_count for r in runtime.list_sessions()] == [4]


@pytest.fixture
def tag() -> Iterator[str]:
    """A marker for this test's MCP server processes; none may outlive the test."""
    marker = f"oh-api-{uuid.uuid4().hex}"
    yield marker
    assert tagged_pids(marker) == [], "MCP server processes leaked"


async def test_a_session_mcp_server_crosses_tasks(
    scripted: Scripted, make_runtime: MakeRuntime, tag: str
) -> None:
    """The reason for the host task: an MCP client opened in one task, closed in another."""
    scripted.provider.add(Reply(tool_calls=[tool_call("srv__echo", {"text": "ping"})]), "pong")
    runtime = make_runtime()
    servers = {"srv": {"command": sys.executable, "args": [SERVER, "stdio", tag]}}
    session = await soon(asyncio.create_task(runtime.new_session(mcp_servers=servers)))
    assert tagged_pids(tag) != []
    result = await soon(session.prompt("echo"))
    assert "srv__echo" in scripted.tool_names(0)
    assert [(r.status, r.content) for r in results(result.events)] == [("completed", "ping")]
    assert "srv" not in runtime.settings.mcp_servers  # the server is this session's only
    await soon(asyncio.create_task(session.close()))
    assert tagged_pids(tag) == []


async def test_a_bad_session_mcp_server_names_it(make_runtime: MakeRuntime) -> None:
    with pytest.raises(ConfigError, match="'broken'"):
        await make_runtime().new_session(mcp_servers={"broken": {"commmand": "x"}})


async def test_every_way_of_opening_gives_the_one_session_class(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        assert isinstance(session, Session)
        with pytest.warns(DeprecationWarning, match="session.session is deprecated"):
            assert session.session is session
    async with runtime.open_session() as opened:
        assert type(opened) is Session
