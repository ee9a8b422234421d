"""Context fitting: whole turns are left out of the request, never out of the history."""

from __future__ import annotations

import pytest

from openheim.errors import ContextOverflow
from openheim.events import ContextTrimmed
from openheim.loop import Agent
from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.providers.context import CUT_NOTE, ContextFitter, estimate_tokens, turn_starts
from openheim.testing import ScriptedProvider
from openheim.tools.base import ToolContext
from tests.helpers import collect


def turn(n: int, size: int = 400) -> list[Message]:
    """One finished turn with a tool call and its result (about ``size`` characters each)."""
    call = ToolUseBlock(f"c{n}", "read_file", {"path": f"f{n}"})
    return [
        Message.user(f"question {n} " + "q" * size),
        Message("assistant", (call,)),
        Message("user", (ToolResultBlock(f"c{n}", "r" * size),)),
        Message.assistant(f"answer {n} " + "a" * size),
    ]


def history(turns: int) -> list[Message]:
    out: list[Message] = []
    for n in range(turns):
        out += turn(n)
    return [*out, Message.user("current question")]


async def drain(fitter: ContextFitter, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in fitter.stream(request)]


def test_turns_start_at_user_prompts_only() -> None:
    assert turn_starts(history(2)) == [0, 4, 8]


async def test_request_within_the_window_is_untouched() -> None:
    inner = ScriptedProvider(["ok"])
    request = ModelRequest("m", tuple(history(2)))
    items = await drain(ContextFitter(inner, 100_000), request)
    assert not any(isinstance(i, ContextTrimmed) for i in items)
    assert inner.requests[0] == request


async def test_oldest_whole_turns_are_left_out() -> None:
    messages = history(5)
    request = ModelRequest("m", tuple(messages))
    window = int(estimate_tokens(request) * 0.6)
    inner = ScriptedProvider(["ok"])
    items = await drain(ContextFitter(inner, window), request)
    sent = inner.requests[0].messages
    trimmed = next(i for i in items if isinstance(i, ContextTrimmed))
    assert trimmed.total == len(messages) and trimmed.dropped == len(messages) - len(sent)
    assert trimmed.dropped % 4 == 0  # whole turns only
    assert estimate_tokens(inner.requests[0]) <= window * 0.9
    first = sent[0].content[0]
    assert isinstance(first, TextBlock)
    assert first.text == CUT_NOTE.format(n=trimmed.dropped)
    uses = {b.id for m in sent for b in m.content if isinstance(b, ToolUseBlock)}
    results = {b.tool_use_id for m in sent for b in m.content if isinstance(b, ToolResultBlock)}
    assert uses == results  # no call split from its result
    assert sent[-1] == messages[-1]


async def test_current_turn_too_big_is_a_clear_error() -> None:
    request = ModelRequest("m", (Message.user("x" * 10_000),))
    with pytest.raises(ContextOverflow, match="current turn alone") as err:
        await drain(ContextFitter(ScriptedProvider([]), 1000), request)
    assert err.value.hint is not None and "new session" in err.value.hint


async def test_prompt_too_long_trims_and_resends_once() -> None:
    inner = ScriptedProvider([ContextOverflow("prompt is too long", status=400), "ok"])
    request = ModelRequest("m", tuple(history(4)))
    items = await drain(ContextFitter(inner, None), request)
    assert isinstance(items[-1], ModelResponse)
    first, second = inner.requests
    assert first == request and len(second.messages) < len(request.messages)
    assert any(isinstance(i, ContextTrimmed) for i in items)


async def test_second_overflow_is_raised() -> None:
    overflow = ContextOverflow("prompt is too long", status=400)
    inner = ScriptedProvider([overflow, ContextOverflow("still too long", status=400)])
    with pytest.raises(ContextOverflow, match="still too long"):
        await drain(ContextFitter(inner, None), ModelRequest("m", tuple(history(4))))
    assert len(inner.requests) == 2


async def test_stored_history_is_never_changed(ctx: ToolContext) -> None:
    stored = history(5)
    before = list(stored)
    window = int(estimate_tokens(ModelRequest("m", tuple(stored))) * 0.6)
    inner = ScriptedProvider(["fine"])
    agent = Agent(ContextFitter(inner, window), "m", context=ctx)
    events = await collect(agent.run(stored))
    assert any(isinstance(e, ContextTrimmed) for e in events)
    assert stored[: len(before)] == before and stored[-1] == Message.assistant("fine")


def test_a_tool_schema_counts_by_its_own_text_even_where_an_old_ones_id_is_reused() -> None:
    import json

    from openheim.providers.base import ToolSpec
    from openheim.providers.context import CHARS_PER_TOKEN

    for size in (400, 4000, 40, 4000):  # new dicts, often at the address of the one just freed
        schema = {"type": "object", "description": "x" * size}
        request = ModelRequest(model="m", messages=(), tools=(ToolSpec("t", "", schema),))
        expected = len(json.dumps(schema)) // CHARS_PER_TOKEN + 1
        assert estimate_tokens(request) == expected
        assert estimate_tokens(request) == expected
