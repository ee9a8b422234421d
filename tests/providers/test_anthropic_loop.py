"""The agent loop end to end on the Anthropic adapter, against the fake server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openheim.events import Finished, ThinkingDelta, ToolResult
from openheim.loop import Agent
from openheim.messages import Message, ThinkingBlock, ToolResultBlock, Usage
from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest
from openheim.testing.fake_server import FakeLLMServer
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.decorator import tool
from tests.helpers import collect
from tests.providers.test_anthropic_support import MakeAnthropic, anthropic_factory

SIGNATURE = "EqQBCkgIARABGAIiQLsig+/=="


@pytest.fixture
async def anthropic(server: FakeLLMServer) -> AsyncIterator[MakeAnthropic]:
    async with anthropic_factory(server) as make:
        yield make


@tool
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first addend
        b: the second addend
    """
    return str(a + b)


def answer(request: RecordedRequest) -> FakeReply:
    """The model's last turn: report the tool's result."""
    return FakeReply(text=f"The sum is {request.last_tool_result}.")


async def test_pause_tool_call_result_and_final_answer(
    server: FakeLLMServer, anthropic: MakeAnthropic, ctx: ToolContext
) -> None:
    server.add(
        FakeReply(text="Let me see. ", finish_reason="pause_turn"),
        FakeReply(
            reasoning="Use the tool.",
            thinking_signature=SIGNATURE,
            tool_calls=[FakeToolCall("add", {"a": 2, "b": 3}, id="toolu_add")],
            usage={"input_tokens": 50, "output_tokens": 20, "cache_creation_input_tokens": 900},
        ),
        answer,
    )
    agent = Agent(anthropic(thinking="adaptive"), "test-model", tools=ToolSet([add]), context=ctx)
    history = [Message.user("What is 2 + 3?")]
    events = await collect(agent.run(history))

    finished = events[-1]
    assert isinstance(finished, Finished)
    assert (finished.stop_reason, finished.text) == ("end_turn", "The sum is 5.")
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Use the tool."
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.id, result.content, result.status) == ("toolu_add", "5", "completed")
    assert finished.usage == Usage(10 + 50 + 10, 5 + 20 + 5, 0, 900)
    server.assert_done()
    assert [m.role for m in history] == ["user", "assistant", "assistant", "user", "assistant"]
    assert history[2].content[0] == ThinkingBlock("Use the tool.", SIGNATURE)
    assert history[3].content == (ToolResultBlock("toolu_add", "5"),)

    after_pause = server.requests[1].body["messages"]
    assert after_pause[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me see. "}],
    }
    last = server.requests[2].body
    assert last["tools"][0]["name"] == "add"
    assert last["tools"][0]["input_schema"]["required"] == ["a", "b"]
    assert [m["role"] for m in last["messages"]] == ["user", "assistant", "user"]
    paused_and_resumed = last["messages"][1]["content"]
    assert [block["type"] for block in paused_and_resumed] == ["text", "thinking", "tool_use"]
    assert paused_and_resumed[1]["signature"] == SIGNATURE
    assert last["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_add",
            "content": "5",
            "cache_control": {"type": "ephemeral"},
        }
    ]
