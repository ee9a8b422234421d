"""``EnvelopeProvider``: what the inner provider receives, what streams out, and a full run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from openheim.envelope import EnvelopeProvider, envelope_schema
from openheim.envelope.parse import ENVELOPE_ERROR, HOW_TO
from openheim.events import Event, Finished, Notice, TextDelta, ThinkingDelta, ToolResult
from openheim.loop import Agent
from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem, ToolSpec
from openheim.testing import Reply, ScriptedProvider
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.decorator import tool
from tests.helpers import collect

READ = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}})


def envelope(*actions: dict[str, Any], note: str | None = None) -> str:
    body: dict[str, Any] = {"actions": list(actions)}
    if note is not None:
        body["assistant_text"] = note
    return f"```openheim-agent\n{json.dumps(body)}\n```"


def action(tool_name: str, /, id: str = "t1", **arguments: Any) -> dict[str, Any]:
    return {"type": "tool", "id": id, "name": tool_name, "arguments": arguments}


async def stream(reply: Reply, request: ModelRequest | None = None) -> list[StreamItem]:
    provider = EnvelopeProvider(ScriptedProvider([reply]))
    request = request or ModelRequest("m", (Message.user("hi"),), tools=(READ,))
    return [item async for item in provider.stream(request)]


def texts(items: list[StreamItem]) -> list[str]:
    return [i.text for i in items if isinstance(i, TextDelta)]


def response(items: list[StreamItem]) -> ModelResponse:
    last = items[-1]
    assert isinstance(last, ModelResponse)
    return last


async def test_a_block_streamed_char_by_char_never_shows() -> None:
    text = f"Let me look.\n{envelope(action('read_file', path='a'), note='Reading.')}\n"
    items = await stream(Reply(chunks=list(text), usage=Usage(11, 7)))
    shown = texts(items)
    assert "".join(shown) == "Let me look.\n\nReading."
    assert not any("`" in t or "openheim" in t or "{" in t for t in shown)
    assert shown[-1] == "Reading."
    final = response(items)
    assert final.finish == "tool_use"
    assert final.usage == Usage(11, 7)
    assert final.message.content == (
        TextBlock("Let me look.\n\nReading."),
        ToolUseBlock("t1", "read_file", {"path": "a"}),
    )


async def test_backticks_at_a_chunk_edge_that_open_no_block_are_forwarded() -> None:
    items = await stream(Reply(chunks=["Use ``", "`py", "thon\nx\n``", "`", " ok"]))
    assert texts(items) == ["Use ", "```py", "thon\nx\n", "``` ok"]
    final = response(items)
    assert final.message.text == "Use ```python\nx\n``` ok"
    assert final.finish == "end_turn"


async def test_a_final_answer_keeps_the_inner_finish() -> None:
    items = await stream(Reply(chunks=["cut"], finish="max_tokens"))
    assert response(items).finish == "max_tokens"
    assert texts(items) == ["cut"]


async def test_duplicate_ids_yield_a_warning_notice() -> None:
    text = envelope(action("read_file", path="a"), action("read_file", path="b"))
    items = await stream(Reply(text))
    notices = [i for i in items if isinstance(i, Notice)]
    assert len(notices) == 1
    assert notices[0].level == "warning"
    assert "'t1'" in notices[0].message
    assert [c.arguments for c in response(items).message.tool_uses] == [{"path": "a"}]


async def test_thinking_passes_through() -> None:
    items = await stream(Reply("answer", thinking="pondering", signature="sig"))
    assert [i.text for i in items if isinstance(i, ThinkingDelta)] == ["pondering"]
    assert response(items).message.content[0].kind == "thinking"


async def test_the_inner_request_carries_the_protocol_not_native_tools() -> None:
    inner = ScriptedProvider(["ok"])
    history = (
        Message.user("read a"),
        Message("assistant", (ToolUseBlock("t1", "read_file", {"path": "a"}),)),
        Message("user", (ToolResultBlock("t1", "no such file", is_error=True),)),
    )
    request = ModelRequest("m", history, system="You help.", tools=(READ,))
    _ = [item async for item in EnvelopeProvider(inner).stream(request)]
    (sent,) = inner.requests
    assert sent.tools == ()
    assert sent.tool_choice == "auto"
    assert sent.envelope_schema == envelope_schema([READ])
    assert sent.system is not None
    assert sent.system.startswith("You help.\n\n")
    assert "```openheim-agent" in sent.system
    assert "- read_file: Read a file." in sent.system
    assert sent.messages[0] == history[0]
    assert sent.messages[1].content == (
        TextBlock(
            '```openheim-agent\n{"actions": [{"type": "tool", "id": "t1", "name": "read_file", '
            '"arguments": {"path": "a"}}]}\n```'
        ),
    )
    assert sent.messages[2].content == (
        TextBlock("Result of action t1 (read_file) [error]:\nno such file"),
    )


@tool
def save(name: str, text: str, ctx: ToolContext) -> str:
    """Save text to a file in the work dir."""
    path = ctx.path(name, write=True)
    path.write_text(text)
    return f"saved {len(text)} characters to {name}"


def shown_text(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_agent_loop_runs_tools_through_envelopes(ctx: ToolContext) -> None:
    call = envelope(action("save", name="notes.md", text="# Notes\n```sh\nls\n```\n"))
    inner = ScriptedProvider([Reply(chunks=list(f"Saving.\n{call}")), "Saved the notes."])
    agent = Agent(EnvelopeProvider(inner), "m", tools=ToolSet([save]), context=ctx)
    history = [Message.user("save my notes")]
    events = await collect(agent.run(history))
    assert Path(ctx.cwd, "notes.md").read_text() == "# Notes\n```sh\nls\n```\n"
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.name, result.status) == ("save", "completed")
    assert "`" not in shown_text(events).replace("Saved the notes.", "")
    done = events[-1]
    assert isinstance(done, Finished)
    assert (done.stop_reason, done.text) == ("end_turn", "Saved the notes.")
    second = inner.requests[1]
    assert second.messages[-1].content == (
        TextBlock("Result of action t1 (save):\nsaved 21 characters to notes.md"),
    )
    assert "```openheim-agent" in second.messages[-2].text
    assert isinstance(history[2].content[0], ToolResultBlock)
    inner.assert_done()


async def test_agent_loop_reports_a_broken_envelope_once(ctx: ToolContext) -> None:
    broken = '```openheim-agent\n{"actions": [oops]}\n```'
    inner = ScriptedProvider([broken, "Sorry, done."])
    agent = Agent(EnvelopeProvider(inner), "m", tools=ToolSet([save]), context=ctx)
    events = await collect(agent.run([Message.user("go")]))
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.name == ENVELOPE_ERROR
    assert result.is_error
    assert "not valid JSON" in result.content
    assert HOW_TO in result.content
    replay = inner.requests[1].messages
    assert replay[-2].text == broken
    assert replay[-1].text.startswith(f"Result of action envelope ({ENVELOPE_ERROR}) [error]:")
    assert isinstance(events[-1], Finished)
    assert events[-1].stop_reason == "end_turn"


async def test_other_stream_items_pass_through() -> None:
    async def step(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield Notice("warming up")
        yield TextDelta("hi")
        yield ModelResponse(Message.assistant("hi"), "end_turn")

    provider = EnvelopeProvider(ScriptedProvider([step]))
    request = ModelRequest("m", (Message.user("x"),))
    items = [item async for item in provider.stream(request)]
    assert items[0] == Notice("warming up")
    assert texts(items) == ["hi"]
