"""A prompt's ``tap``: the deltas the reader would only pass on go to it straight from the run,
after the news and in order with every other event; a structured prompt has none; the
session's watch refuses deltas while it has notices to tell after them."""

from __future__ import annotations

from pathlib import Path

from openheim.events import Event, Finished, IterationStart, Notice, TextDelta, ThinkingDelta
from openheim.runtime.hooks import Hooks
from openheim.runtime.turn_watch import TurnWatch
from openheim.testing import Reply, tool_call
from tests.api.conftest import MakeRuntime, Scripted


async def test_the_tap_gets_the_deltas_after_the_news_and_in_order(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(Reply(text="abc", chunks=["a", "b", "c"]))
    order: list[tuple[str, Event]] = []

    def tap(delta: TextDelta | ThinkingDelta) -> bool:
        order.append(("tap", delta))
        return True

    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        run.tap = tap
        async for event in run:
            order.append(("read", event))
    tapped = [event for how, event in order if how == "tap"]
    assert tapped == [TextDelta("a"), TextDelta("b"), TextDelta("c")]
    first_tap = order.index(("tap", TextDelta("a")))
    assert any(isinstance(e, IterationStart) for how, e in order[:first_tap] if how == "read")
    assert isinstance(order[-1][1], Finished) and order[-1][1].text == "abc"


async def test_a_refusing_tap_leaves_every_delta_to_the_reader(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(Reply(text="ab", chunks=["a", "b"]))
    async with await make_runtime().new_session() as session:
        run = session.prompt("hi")
        run.tap = lambda delta: False
        read = [event async for event in run]
    assert [e for e in read if isinstance(e, TextDelta)] == [TextDelta("a"), TextDelta("b")]


async def test_the_watch_refuses_deltas_while_notices_wait(tmp_path: Path) -> None:
    hooks = Hooks({}, tmp_path, {})
    watch = TurnWatch(hooks, None, tmp_path)
    tapped: list[Event] = []

    def tap(delta: TextDelta | ThinkingDelta) -> bool:
        tapped.append(delta)
        return True

    guarded = watch.guard(tap)
    assert guarded(TextDelta("free"))
    hooks.warnings.append(Notice("a hook failed", "warning", "loop"))
    assert not guarded(TextDelta("after a hook warning"))
    watch.drain()
    watch._note("a shell change")
    assert not guarded(TextDelta("after a note"))
    watch.drain()
    assert guarded(TextDelta("free again"))
    assert tapped == [TextDelta("free"), TextDelta("free again")]


async def test_a_structured_prompt_leaves_every_delta_to_its_reader(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    scripted.provider.add(
        Reply(text="thinking it over", chunks=["thinking ", "it over"]),
        Reply(tool_calls=[tool_call("submit", {"n": 1})]),
        "done",
    )
    tapped: list[Event] = []

    def tap(delta: TextDelta | ThinkingDelta) -> bool:
        tapped.append(delta)
        return True

    async with await make_runtime().new_session() as session:
        run = session.prompt("count", output_schema=schema)
        run.tap = tap
        read = [event async for event in run]
    assert tapped == []
    assert [e for e in read if isinstance(e, TextDelta)] == [
        TextDelta("thinking "),
        TextDelta("it over"),
        TextDelta("done"),
    ]
