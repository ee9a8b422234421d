"""Images returned by tools reach the history, the store format and every provider's request."""

from __future__ import annotations

from openheim.loop import Agent
from openheim.messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock
from openheim.providers import anthropic_wire, gemini_wire, openai_wire
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolOutput, ToolSet
from openheim.tools.decorator import tool
from tests.helpers import collect

PNG = ImageBlock("iVBORw0KGgo=", "image/png")


@tool(read_only=True)
def screenshot() -> ToolOutput:
    """Take a screenshot."""
    return ToolOutput("one screenshot", images=(PNG,))


def conversation() -> list[Message]:
    return [
        Message.user("look"),
        Message("assistant", (ToolUseBlock("c1", "screenshot", {}),)),
        Message("user", (ToolResultBlock("c1", "one screenshot", images=(PNG,)),)),
    ]


async def test_the_loop_keeps_tool_images(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[tool_call("screenshot", id="c1")]), "seen"])
    history = [Message.user("look")]
    await collect(Agent(provider, "m", tools=ToolSet([screenshot]), context=ctx).run(history))
    result = history[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.images == (PNG,)
    assert provider.requests[1].messages[-1] == history[2]


def test_images_survive_the_stored_form() -> None:
    message = conversation()[2]
    assert Message.from_dict(message.to_dict()) == message
    plain = Message("user", (ToolResultBlock("c2", "text only"),))
    assert "images" not in plain.to_dict()["content"][0]  # rows without images are unchanged


def test_anthropic_puts_images_inside_the_tool_result() -> None:
    wire = anthropic_wire.convert_messages(conversation())
    result = wire[-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"][0] == {"type": "text", "text": "one screenshot"}
    assert result["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": PNG.data,
    }


def test_openai_sends_images_in_a_user_message_after_the_tool_message() -> None:
    wire = openai_wire.convert_messages(None, conversation())
    assert wire[-2] == {"role": "tool", "tool_call_id": "c1", "content": "one screenshot"}
    parts = wire[-1]["content"]
    assert wire[-1]["role"] == "user" and "c1" in parts[0]["text"]
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{PNG.data}"


def test_gemini_sends_images_as_parts_after_the_response() -> None:
    wire = gemini_wire.convert_messages(conversation())
    parts = wire[-1]["parts"]
    assert "functionResponse" in parts[0]
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": PNG.data}}
