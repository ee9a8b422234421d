"""Cancelling the agent loop: during streaming, during a tool, and by closing the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from openheim.events import (
    CostUpdate,
    Event,
    TextDelta,
    ToolCall,
)
from openheim.loop import CANCELLED_RESULT
from openheim.messages import Message, ToolResultBlock
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool
from tests.helpers import collect
from tests.loop_support import echo, finished, make_agent, results


async def test_cancel_during_streaming(ctx: ToolContext) -> None:
    release = asyncio.Event()

    async def stalls(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("partial ")
        await release.wait()  # never set: only cancellation gets past this
        yield ModelResponse(Message.assistant("never"), "end_turn")

    provider = ScriptedProvider([stalls])
    cancel = asyncio.Event()
    history = [Message.user("hi")]
    events: list[Event] = []
    async for event in make_agent(provider, ctx).run(history, cancel=cancel):
        events.append(event)
        if isinstance(event, TextDelta):
            cancel.set()
    done = finished(events)
    assert (done.stop_reason, done.reason) == ("cancelled", "user_cancelled")
    assert history[-1] == Message.assistant("partial ")


async def test_cancel_during_a_tool_answers_every_pending_call(ctx: ToolContext) -> None:
    cancel = asyncio.Event()
    saw_cancel: list[bool] = []

    @tool(read_only=False)
    async def hangs() -> str:
        cancel.set()  # the user cancels while this tool is running
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.append(True)
            raise
        return "never"

    calls = [
        tool_call("echo", {"text": "before"}),
        tool_call("hangs"),
        tool_call("echo", {"text": "-"}),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls)])
    history = [Message.user("hi")]
    agent = make_agent(provider, ctx, echo, hangs)
    events = await collect(agent.run(history, cancel=cancel))
    assert finished(events).stop_reason == "cancelled"
    assert saw_cancel == [True]
    answers = [b for b in history[-1].content if isinstance(b, ToolResultBlock)]
    assert [b.tool_use_id for b in answers] == [c.id for c in calls]
    assert [b.content for b in answers] == ["echo: before", CANCELLED_RESULT, CANCELLED_RESULT]
    statuses = [r.status for r in results(events)]
    assert statuses == ["completed", "cancelled", "cancelled"]


async def test_closing_the_stream_cancels_the_run(ctx: ToolContext) -> None:
    ran: list[str] = []

    @tool
    def record() -> str:
        ran.append("ran")
        return "ok"

    provider = ScriptedProvider([Reply(tool_calls=[tool_call("record")])])
    history = [Message.user("hi")]
    gen = make_agent(provider, ctx, record).run(history)
    async for event in gen:
        if isinstance(event, ToolCall):
            break  # the tool cannot start before this event has been handled
    await gen.aclose()
    assert ran == []
    last = history[-1].content[0]
    assert isinstance(last, ToolResultBlock) and last.content == CANCELLED_RESULT


async def test_a_cancel_while_the_closing_events_are_read_still_ends_with_finished(
    ctx: ToolContext,
) -> None:
    """The closing events carry no cancellation point: a cancel that arrives while the consumer
    handles the turn's cost cannot turn the end of the stream into a CancelledError."""
    cancel = asyncio.Event()
    events: list[Event] = []
    run = make_agent(ScriptedProvider(["done"]), ctx).run([Message.user("hi")], cancel=cancel)
    async for event in run:
        events.append(event)
        if isinstance(event, CostUpdate):
            cancel.set()
            for _ in range(5):  # let the cancel reach the run's task
                await asyncio.sleep(0)
    assert (finished(events).stop_reason, finished(events).text) == ("end_turn", "done")
