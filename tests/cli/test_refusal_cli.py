"""The wording of refusals in ``openheim run``: the tool line, the refusal the model reads, and
the summary at exit."""

from __future__ import annotations

import io

import pytest

from openheim.approval import ApprovalRequest, Ask
from openheim.cli.refusal import HeadlessRefusals, summary, ways_out
from openheim.events import ToolResult
from openheim.term.render import TextRenderer

WRITE = ApprovalRequest("c1", "write_file", {"path": "a.txt"}, False, "edit")


@pytest.mark.parametrize(
    ("status", "content", "line"),
    [
        ("denied", "denied: no one to ask", "  ✗ write_file: denied: no one to ask\n"),
        ("failed", "a.txt does not exist", "  ✗ write_file: failed: a.txt does not exist\n"),
        ("completed", "wrote 3 bytes", "  ✓ write_file: completed, 1 line, 13 bytes\n"),
        ("completed", "a\nb\n", "  ✓ write_file: completed, 2 lines, 3 bytes\n"),
        ("completed", "", "  ✓ write_file: completed, no output\n"),
    ],
)
def test_the_tool_line_says_the_status_once(status: str, content: str, line: str) -> None:
    err = io.StringIO()
    result = ToolResult("c1", "write_file", content, status != "completed", status)  # type: ignore[arg-type]
    TextRenderer(io.StringIO(), err)(result)
    assert err.getvalue() == line


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        (Ask(), "run openheim in a terminal to be asked"),
        (Ask(auto_allows=True), "run openheim in a terminal to be asked or pass --approve auto"),
        (
            Ask(rules=('allow path "a.txt"',), auto_allows=True),
            "run openheim in a terminal to be asked, pass --approve auto or allow it with "
            "`openheim permissions add 'allow path \"a.txt\"'`",
        ),
        (
            Ask(rules=('allow command "it\'s"',)),
            "run openheim in a terminal to be asked or allow it with "
            "`openheim permissions add 'allow command \"it'\"'\"'s\"'`",
        ),
    ],
)
def test_the_ways_out_fit_the_question(ask: Ask, expected: str) -> None:
    assert ways_out(ask) == expected


async def test_a_refusal_says_why_and_how_to_proceed() -> None:
    refusals = HeadlessRefusals()
    ask = Ask("the approval mode is ask", rules=('allow path "a.txt"',), auto_allows=True)
    answer = await refusals(WRITE, ask)
    first, second = answer.reason.splitlines()
    assert first == (
        "write_file needs approval (the approval mode is ask) "
        "and there is no one to ask in this session."
    )
    assert second == f"To let it run: {ways_out(ask)}."


async def test_the_summary_lists_each_rule_once_and_ends_with_the_warning() -> None:
    refusals = HeadlessRefusals()
    for rules in (('allow path "a.txt"',), ('allow path "a.txt"',), ("allow tool x",)):
        await refusals(WRITE, Ask(rules=rules))
    lines = summary(4, refusals)
    assert lines[0].startswith("openheim: 3 tool calls needed approval and no one could be asked")
    assert lines[0].endswith(
        "To let such calls run: run openheim in a terminal to be asked, or add these rules:"
    )
    assert lines[1:3] == [
        "  openheim permissions add 'allow path \"a.txt\"'",
        "  openheim permissions add 'allow tool x'",
    ]
    assert lines[3] == (
        "openheim: 4 tool calls were denied; the answer above may describe work that was refused"
    )


def test_no_summary_without_denials() -> None:
    assert summary(0, HeadlessRefusals()) == []
    assert summary(1, None) == [
        "openheim: 1 tool call was denied; the answer above may describe work that was refused"
    ]


async def test_two_refusals_of_one_rule_say_two_calls_and_this_rule() -> None:
    refusals = HeadlessRefusals()
    for _ in range(2):
        await refusals(WRITE, Ask(rules=('allow path "a.txt"',)))
    lines = summary(2, refusals)
    assert lines == [
        "openheim: 2 tool calls needed approval and no one could be asked (no terminal). "
        "To let such calls run: run openheim in a terminal to be asked, or add this rule:",
        "  openheim permissions add 'allow path \"a.txt\"'",
        "openheim: 2 tool calls were denied; the answer above may describe work that was refused",
    ]
