"""``ToolSet.bind``: a model's call becomes a bound call ready to run, or the error result the
model reads; ``BoundCall.run`` turns failures into results; ``run_batched`` keeps the order."""

from __future__ import annotations

import asyncio

from openheim.errors import ToolError
from openheim.messages import ToolUseBlock
from openheim.tools.base import BoundCall, ToolContext, ToolOutput, ToolSet, run_batched
from openheim.tools.decorator import tool


@tool(read_only=True)
def echo(text: str, times: int = 1) -> str:
    """Echo the text back."""
    return text * times


@tool
def fails(kind: str) -> str:
    """Fail in the way asked for."""
    if kind == "tool":
        raise ToolError("disk is full", hint="free some space")
    raise RuntimeError("boom")


TOOLS = ToolSet([echo, fails])


def failure(result: BoundCall | ToolOutput) -> str:
    assert isinstance(result, ToolOutput) and result.is_error
    return result.content


def test_a_valid_call_is_bound_to_its_tool_with_parsed_arguments() -> None:
    call = ToolUseBlock("c1", "echo", {"text": "ab", "times": 2})
    bound = TOOLS.bind(call)
    assert isinstance(bound, BoundCall)
    assert (bound.call, bound.tool, bound.read_only) == (call, echo, True)
    assert (bound.args.text, bound.args.times) == ("ab", 2)


def test_an_unknown_tool_names_the_available_ones() -> None:
    message = failure(TOOLS.bind(ToolUseBlock("c1", "nope", {})))
    assert message == "unknown tool 'nope'; available tools: echo, fails"
    assert failure(ToolSet().bind(ToolUseBlock("c1", "nope", {}))).endswith("tools: none")


def test_arguments_that_are_not_an_object_are_refused_with_the_text_sent() -> None:
    message = failure(TOOLS.bind(ToolUseBlock("c1", "echo", {}, raw_arguments="{not json")))
    assert message.startswith("arguments for echo are not a JSON object: '{not json'")
    assert "one JSON object" in message


def test_arguments_that_do_not_match_the_schema_say_which_field() -> None:
    wrong_type = failure(TOOLS.bind(ToolUseBlock("c1", "echo", {"text": 3})))
    assert "invalid arguments for echo" in wrong_type and "text" in wrong_type
    unknown_key = failure(TOOLS.bind(ToolUseBlock("c1", "echo", {"text": "x", "extra": 1})))
    assert "extra" in unknown_key and "unknown key" in unknown_key


def test_a_call_the_provider_could_not_parse_gets_the_providers_error() -> None:
    call = ToolUseBlock("c1", "echo", {"text": "x"}, error="the action block was cut off")
    assert failure(TOOLS.bind(call)) == "the action block was cut off"


async def test_running_a_bound_call_reports_failures_as_results(ctx: ToolContext) -> None:
    told = TOOLS.bind(ToolUseBlock("c1", "fails", {"kind": "tool"}))
    crashed = TOOLS.bind(ToolUseBlock("c2", "fails", {"kind": "crash"}))
    assert isinstance(told, BoundCall) and isinstance(crashed, BoundCall)
    assert failure(await told.run(ctx)) == "disk is full (free some space)"
    assert failure(await crashed.run(ctx)) == "tool fails failed: RuntimeError: boom"


async def test_running_a_bound_call_caps_its_output_and_passes_the_call_id(
    ctx: ToolContext,
) -> None:
    seen: list[str] = []

    @tool(read_only=True)
    def huge(ctx: ToolContext) -> str:
        """Return a lot."""
        seen.append(ctx.call_id)
        return "line\n" * 100_000

    bound = ToolSet([huge]).bind(ToolUseBlock("call-7", "huge", {}))
    assert isinstance(bound, BoundCall)
    output = await bound.run(ctx)
    assert not output.is_error and "output truncated" in output.content
    assert len(output.content.encode()) < 129 * 1024
    assert seen == ["call-7"] and ctx.call_id == ""


async def test_run_batched_overlaps_read_only_calls_and_isolates_mutating_ones() -> None:
    wanted = [("echo", {"text": "a"}), ("echo", {"text": "b"}), ("fails", {"kind": "x"})]
    wanted.append(("echo", {"text": "c"}))
    calls = [TOOLS.bind(ToolUseBlock(f"c{i}", n, a)) for i, (n, a) in enumerate(wanted)]
    bound = [b for b in calls if isinstance(b, BoundCall)]
    assert len(bound) == 4
    log: list[str] = []
    both_started = asyncio.Event()

    async def execute(call: BoundCall) -> None:
        log.append(f"start {call.call.id}")
        if call.call.id in ("c0", "c1"):
            if log.count("start c0") + log.count("start c1") == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), timeout=5)
        log.append(f"end {call.call.id}")

    await asyncio.wait_for(run_batched(bound, execute), timeout=5)
    assert log[:2] == ["start c0", "start c1"]  # the read-only pair overlapped
    assert log[4:] == ["start c2", "end c2", "start c3", "end c3"]


def test_the_specs_are_made_once_per_set_and_again_after_an_add() -> None:
    tools = ToolSet([echo])
    first = tools.specs
    assert tools.specs is first and [s.name for s in first] == ["echo"]
    tools.add(fails)
    assert [s.name for s in tools.specs] == ["echo", "fails"]
    assert tools.specs[0] == first[0] and tools.specs is not first
