"""The envelope protocol for a small model: short instructions, and answers without tools."""

from __future__ import annotations

from openheim.envelope import envelope_request
from openheim.envelope.prompt import RESTATE, protocol_section
from openheim.envelope.provider import NO_TOOLS_NOTICE, EnvelopeProvider
from openheim.events import Notice, TextDelta
from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.providers.base import ModelRequest, ModelResponse, ToolSpec
from openheim.testing import Reply, ScriptedProvider
from openheim.tools.builtin import builtin_tools
from openheim.tools.compact import CompactToolSet

LIST = ToolSpec("list_dir", "List a folder", {"type": "object", "properties": {"path": {}}})
READ = ToolSpec(
    "read_file",
    "Read a text file",
    {
        "type": "object",
        "properties": {"path": {}, "offset": {}, "limit": {}},
        "required": ["path"],
    },
)


def test_compact_section_lists_signatures_and_an_example_of_an_offered_tool() -> None:
    section = protocol_section([LIST, READ], "auto", compact=True)
    assert "- read_file(path, offset?, limit?): Read a text file" in section
    assert "- list_dir(path?): List a folder" in section
    assert '"name": "read_file", "arguments": {"path": "README.md"}' in section
    only_list = protocol_section([LIST], "auto", compact=True)
    assert '"name": "list_dir", "arguments": {"path": "."}' in only_list


def test_compact_section_is_a_fraction_of_the_full_one() -> None:
    specs = CompactToolSet(builtin_tools(allow_shell=True)).specs
    full = [t.spec for t in builtin_tools(allow_shell=True)]
    compact = protocol_section(specs, "auto", compact=True)
    assert len(compact) * 3 < len(protocol_section(full, "auto"))
    assert len(compact) < 1600  # about 400 tokens


def results_history() -> tuple[Message, ...]:
    call = ToolUseBlock("t1", "read_file", {"path": "README.md"})
    return (
        Message.user("Quote the first heading of README.md."),
        Message("assistant", (call,)),
        Message("user", (ToolResultBlock("t1", "# Hello"),)),
    )


def test_an_answer_request_restates_the_users_request_after_the_results() -> None:
    request = ModelRequest("m", results_history(), system="sys", tools=(READ,), tool_choice="none")
    compact = envelope_request(request, compact=True)
    last = compact.messages[-1]
    assert last.text.endswith(RESTATE.format(request="Quote the first heading of README.md."))
    assert "Result of action t1 (read_file):\n# Hello" in last.text
    assert compact.system == "sys" and compact.envelope_schema is None
    plain = envelope_request(request)
    assert "Now answer" not in plain.messages[-1].text


def test_no_restatement_when_the_history_does_not_end_with_results() -> None:
    request = ModelRequest("m", (Message.user("hi"),), tools=(READ,), tool_choice="none")
    assert envelope_request(request, compact=True).messages[-1].text == "hi"


async def test_a_block_in_an_answer_without_tools_is_left_out_with_a_notice() -> None:
    text = 'The heading is Hello.\n```openheim-agent\n{"actions": []}\n```\n'
    inner = ScriptedProvider([Reply(text=text)])
    provider = EnvelopeProvider(inner, compact=True)
    request = ModelRequest("m", results_history(), tools=(READ,), tool_choice="none")
    items = [item async for item in provider.stream(request)]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.tool_uses == ()
    assert response.message.content == (TextBlock("The heading is Hello."),)
    assert Notice(NO_TOOLS_NOTICE, "warning", "provider") in items
    shown = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert "openheim-agent" not in shown
