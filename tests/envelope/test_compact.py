"""The envelope protocol for a small model: short instructions, and answers without tools."""

from __future__ import annotations

import pytest

from openheim.envelope import envelope_request
from openheim.envelope.answer import ANSWER, answer_items, answer_turn
from openheim.envelope.prompt import protocol_section
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
    assert "- read_file(path): Read a text file" in section  # only what the tool requires
    assert "- list_dir(): List a folder" in section
    assert '"name": "list_dir", "arguments": {}' in section
    only_read = protocol_section([READ], "auto", compact=True)
    assert '"name": "read_file", "arguments": {"path": "README.md"}' in only_read


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


def test_a_small_models_answer_turn_is_told_as_one_message() -> None:
    earlier = (Message.user("hello"), Message.assistant("hi"))
    failed = ToolUseBlock("t2", "search", {"pattern": "x"})
    history = (
        *earlier,
        *results_history()[:2],
        Message("assistant", (failed,)),
        Message("user", (ToolResultBlock("t1", "# Hello\n"), ToolResultBlock("t2", "bad", True))),
    )
    request = ModelRequest("m", history, system="sys", tools=(READ,), tool_choice="none")
    compact = envelope_request(request, compact=True)
    assert compact.messages[:2] == earlier
    (turn,) = compact.messages[2:]
    assert turn.role == "user"
    assert turn.text == (
        "The file README.md says:\n# Hello\n\nThe tool search failed:\nbad\n\n"
        + ANSWER.format(request="Quote the first heading of README.md.")
    )
    assert compact.system == "sys" and compact.envelope_schema is None and not compact.tools
    plain = envelope_request(request)
    assert "Result of action t1 (read_file):" in plain.messages[-1].text


def test_a_listing_is_framed_as_the_folder_and_other_tools_by_name() -> None:
    listing = ToolUseBlock("t1", "list_dir", {})
    glob = ToolUseBlock("t2", "glob", {"pattern": "*.md"})
    history = (
        Message.user("What is here?"),
        Message("assistant", (listing, glob)),
        Message("user", (ToolResultBlock("t1", "a.txt"), ToolResultBlock("t2", "b.md"))),
    )
    told = answer_turn(history)
    assert told is not None
    assert told[0].text.startswith(
        "The folder . holds 1 entry: a.txt.\n\nThe tool glob returned:\nb.md"
    )


def test_no_answer_turn_when_the_history_does_not_end_with_results() -> None:
    assert answer_turn((Message.user("hi"),)) is None
    assert answer_turn(()) is None
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


@pytest.mark.parametrize(
    ("content", "told"),
    [
        ("[. is empty]", "The folder . is empty."),
        ("a.txt\n", "The folder . holds 1 entry: a.txt."),
        (".ci/\nsrc/\nREADME.md", "The folder . holds 3 entries: .ci/, src/, README.md."),
        (
            "a\nb\n[2 more entries not shown]",
            "The folder . holds 2 entries: a, b.\n[2 more entries not shown]",
        ),
    ],
)
def test_a_listing_is_told_as_one_sentence(content: str, told: str) -> None:
    listing = ToolUseBlock("t1", "list_dir", {"path": "."})
    history = (Message.user("What is here?"), Message("assistant", (listing,)))
    turn = answer_turn((*history, Message("user", (ToolResultBlock("t1", content),))))
    assert turn is not None
    assert turn[0].text == f"{told}\n\n{ANSWER.format(request='What is here?')}"


def test_the_answer_to_a_listing_is_started_with_the_listings_opening() -> None:
    """A 135M model copies a long list when its reply starts the list; asked for a sentence,
    it dropped the first names or wrote the list again and again."""
    listing = ToolUseBlock("t1", "list_dir", {})
    history = (Message.user("What is here?"), Message("assistant", (listing,)))
    turn = answer_turn((*history, Message("user", (ToolResultBlock("t1", "a\nb\nc"),))))
    assert turn is not None
    assert turn[-1] == Message.assistant("The folder . holds 3 entries: ")
    empty = answer_turn((*history, Message("user", (ToolResultBlock("t1", "[. is empty]"),))))
    assert empty is not None and empty[-1].role == "user"


@pytest.mark.parametrize(
    ("starts", "reply"), [(True, "The folder . holds 2 entries: a, b."), (False, "a, b.")]
)
async def test_the_started_answer_is_part_of_the_reply(starts: bool, reply: str) -> None:
    """Only a provider that continues a last assistant message is given the opening."""
    inner = ScriptedProvider([Reply(text="a, b.")])
    listing = ToolUseBlock("t1", "list_dir", {})
    history = (
        Message.user("What is here?"),
        Message("assistant", (listing,)),
        Message("user", (ToolResultBlock("t1", "a\nb"),)),
    )
    request = ModelRequest("m", history, tools=(READ,), tool_choice="none")
    provider = EnvelopeProvider(inner, compact=True, starts_answer=starts)
    items = [item async for item in provider.stream(request)]
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == reply
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.text == reply
    assert inner.requests[-1].messages[-1].role == ("assistant" if starts else "user")
    assert inner.requests[-1].answer_items == (("a", "b") if starts else ())


LISTED = ToolUseBlock("t1", "list_dir", {"path": "docs"})
GLOBBED = ToolUseBlock("t2", "glob", {"pattern": "*"})


@pytest.mark.parametrize(
    ("calls", "results", "items"),
    [
        ((LISTED,), (ToolResultBlock("t1", "a.md\nimg/\n[3 more]"),), ("a.md", "img/")),
        ((LISTED,), (ToolResultBlock("t1", "[docs is empty]"),), ()),
        ((LISTED,), (ToolResultBlock("t1", "no such folder", True),), ()),
        ((GLOBBED,), (ToolResultBlock("t2", "a.md"),), ()),
        ((LISTED, GLOBBED), (ToolResultBlock("t1", "a.md"), ToolResultBlock("t2", "a.md")), ()),
    ],
)
def test_only_a_started_listing_answer_carries_the_listings_names(
    calls: tuple[ToolUseBlock, ...], results: tuple[ToolResultBlock, ...], items: tuple[str, ...]
) -> None:
    """The names an answer may go on with are the entries of the one listing it starts."""
    history = (Message.user("What is here?"), Message("assistant", calls), Message("user", results))
    assert answer_items(history) == items
    request = ModelRequest("m", history, tools=(READ,), tool_choice="none")
    assert envelope_request(request, compact=True).answer_items == items
    assert envelope_request(request).answer_items == ()
    assert answer_items(history[:1]) == ()
