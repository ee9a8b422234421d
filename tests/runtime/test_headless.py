"""The wording of the headless refusal (``runtime.headless``): the tool line, the refusal the
model reads, and the closing lines after a run with denied calls."""

from __future__ import annotations

import io

import pytest

from openheim.approval import ApprovalRequest, Ask
from openheim.events import ToolResult
from openheim.runtime.headless import AUTO_GATEWAY, HeadlessRefusals
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
    assert HeadlessRefusals().ways_out(ask) == expected


def test_the_gateway_names_its_own_switch_to_auto() -> None:
    ways = HeadlessRefusals(AUTO_GATEWAY).ways_out(Ask(auto_allows=True))
    assert ways == 'run openheim in a terminal to be asked or set approval = "auto" in [gateway]'


async def test_a_refusal_says_why_and_how_to_proceed() -> None:
    refusals = HeadlessRefusals()
    ask = Ask("the approval mode is ask", rules=('allow path "a.txt"',), auto_allows=True)
    answer = await refusals(WRITE, ask)
    first, second = answer.reason.splitlines()
    assert first == (
        "write_file needs approval (the approval mode is ask) "
        "and there is no one to ask in this session."
    )
    assert second == f"To let it run: {refusals.ways_out(ask)}."


async def test_the_summary_lists_each_rule_once_and_ends_with_the_warning() -> None:
    refusals = HeadlessRefusals()
    for rules in (('allow path "a.txt"',), ('allow path "a.txt"',), ("allow tool x",)):
        await refusals(WRITE, Ask(rules=rules))
    lines = refusals.closing(4, "openheim: ")
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


def test_no_closing_lines_without_denials_and_only_the_warning_without_refusals() -> None:
    assert HeadlessRefusals().closing(0) == []
    assert HeadlessRefusals().closing(1) == [
        "1 tool call was denied; the answer above may describe work that was refused"
    ]


async def test_closing_forgets_the_refusals_so_the_next_run_names_only_its_own() -> None:
    refusals = HeadlessRefusals()
    await refusals(WRITE, Ask(rules=('allow path "a.txt"',)))
    assert len(refusals.closing(1)) == 3
    assert refusals.closing(2) == [
        "2 tool calls were denied; the answer above may describe work that was refused"
    ]


async def test_two_refusals_of_one_rule_say_two_calls_and_this_rule() -> None:
    refusals = HeadlessRefusals()
    for _ in range(2):
        await refusals(WRITE, Ask(rules=('allow path "a.txt"',)))
    lines = refusals.closing(2, "openheim: ")
    assert lines == [
        "openheim: 2 tool calls needed approval and no one could be asked. "
        "To let such calls run: run openheim in a terminal to be asked, or add this rule:",
        "  openheim permissions add 'allow path \"a.txt\"'",
        "openheim: 2 tool calls were denied; the answer above may describe work that was refused",
    ]
