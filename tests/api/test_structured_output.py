"""``session.prompt(..., output_schema=...)``: the parsed value as the result's ``output``, the
``submit`` tool offered only meanwhile, every attempt's events in one run, and
``NoValidOutput`` when the attempts run out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openheim.errors import ConfigError
from openheim.events import Event, Finished
from openheim.messages import Usage
from openheim.runtime.structured import NoValidOutput
from openheim.testing import Reply, tool_call
from tests.api.conftest import Blocker, MakeRuntime, Scripted
from tests.api.support import soon

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "rank": {"enum": [1, 2, 3]}},
    "required": ["city", "rank"],
}


async def test_the_result_holds_the_parsed_value(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(
        Reply(tool_calls=[tool_call("submit", {"city": "Oslo", "rank": 9})], usage=Usage(3, 1)),
        Reply(tool_calls=[tool_call("submit", {"city": "Oslo", "rank": 2})], usage=Usage(3, 1)),
        Reply("done", usage=Usage(3, 1)),
        "plain",
    )
    async with await make_runtime().new_session() as session:
        result = await soon(session.prompt("where?", output_schema=SCHEMA))
        assert "submit" in scripted.tool_names(0)
        plain = await soon(session.prompt("and now?"))
    assert result.output == {"city": "Oslo", "rank": 2}
    assert result.usage == Usage(9, 3)
    assert sum(isinstance(e, Finished) for e in result.events) == 1
    assert "submit" not in scripted.tool_names(-1)  # offered for that prompt only
    assert plain.output is None


async def test_a_turn_without_submit_gets_another_attempt_and_one_finished(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("Oslo, I think", '{"city": "Oslo", "rank": 1}')
    async with await make_runtime().new_session() as session:
        events = [e async for e in session.prompt("where?", output_schema=SCHEMA)]
    assert sum(isinstance(e, Finished) for e in events) == 1
    retry = scripted.requests[1].messages[-1]
    assert retry.role == "user" and "did not hand in a valid result" in retry.text
    assert "1 attempts left" not in retry.text and "3 attempts left" in retry.text


async def test_no_valid_output_raises_with_the_errors(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("sorry", '{"city": 5}')
    async with await make_runtime().new_session() as session:
        run = session.prompt("where?", output_schema=SCHEMA, output_retries=1)
        with pytest.raises(NoValidOutput) as caught:
            await soon(run)
    assert [e["path"] for e in caught.value.errors] == ["", "/city"]  # the last attempt's
    assert caught.value.stop_reason == "end_turn"
    assert "no valid output after 2 attempts" in str(caught.value)
    assert len(scripted.requests) == 2


@pytest.mark.parametrize(
    ("schema", "retries", "message"),
    [
        ({"type": 5}, 3, "not valid at"),
        ("a string", 3, "must be a JSON object"),
        (SCHEMA, -1, "0 or more"),
    ],
)
async def test_a_bad_schema_is_refused_before_anything_runs(
    scripted: Scripted, make_runtime: MakeRuntime, schema: Any, retries: int, message: str
) -> None:
    async with await make_runtime().new_session() as session:
        with pytest.raises(ConfigError, match=message):
            session.prompt("where?", output_schema=schema, output_retries=retries)
    assert scripted.requests == []


async def test_read_only_mode_keeps_the_submit_tool_and_comes_back_as_it_was(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("submit", {"city": "a", "rank": 3})]), "ok")
    async with await make_runtime().new_session() as session:
        session.set_read_only(True)
        before = [t.name for t in session.agent.tools]
        result = await soon(session.prompt("where?", output_schema=SCHEMA))
        assert session.read_only
        assert [t.name for t in session.agent.tools] == before
    assert result.output == {"city": "a", "rank": 3}
    assert "submit" in scripted.tool_names(0)


async def test_a_cancelled_structured_prompt_ends_once_and_takes_its_tool_back(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]), "after")
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        run = session.prompt("where?", output_schema=SCHEMA)
        task = asyncio.create_task(run.result())
        await soon(blocker.started.wait())
        session.cancel()
        with pytest.raises(NoValidOutput) as caught:
            await soon(task)
        assert caught.value.stop_reason == "cancelled"
        assert "submit" not in [t.name for t in session.agent.tools]
        assert (await soon(session.prompt("again"))).text == "after"
    assert len(scripted.requests) == 2  # no attempt after the cancel
    assert "submit" not in scripted.tool_names(-1)


async def test_closing_the_session_during_a_structured_prompt_ends_it(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]))
    session = await make_runtime(tools=[blocker.tool]).new_session()
    events: list[Event] = []

    async def read() -> None:
        async for event in session.prompt("where?", output_schema=SCHEMA):
            events.append(event)

    task = asyncio.create_task(read())
    await soon(blocker.started.wait())
    await soon(session.close())
    await soon(task)
    assert isinstance(events[-1], Finished) and events[-1].stop_reason == "cancelled"
    assert sum(isinstance(e, Finished) for e in events) == 1
    assert len(scripted.requests) == 1


async def test_a_turn_whose_submit_failed_costs_one_attempt_only(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    bad = tool_call("submit", {"city": "Oslo", "rank": 7})
    scripted.provider.add(Reply(tool_calls=[bad]), "I tried", '{"city": "Oslo", "rank": 3}')
    async with await make_runtime().new_session() as session:
        run = session.prompt("where?", output_schema=SCHEMA, output_retries=1)
        result = await soon(run)
    assert result.output == {"city": "Oslo", "rank": 3}
    assert run.attempts is not None and run.attempts.failed == 1
    retry = scripted.requests[2].messages[-1]
    assert "was not accepted:\n/rank: 7 is not one of [1, 2, 3]" in retry.text
