"""The session's context fitter trims to the model's known window when none is configured, and
follows the model when the session switches to another one."""

from __future__ import annotations

import dataclasses

from openheim.config.schema import CompactionEntry
from openheim.events import ContextTrimmed
from openheim.providers.context import CUT_NOTE
from tests.api.conftest import MakeRuntime, Scripted

LONG = "x" * 40_000
"""About 10,000 tokens by the fitter's estimate: two fill most of a 16,385-token window."""


async def test_an_unconfigured_known_model_is_trimmed_to_its_window(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("first", "second")
    runtime = make_runtime(model="gpt-3.5-turbo")  # 16,385 tokens; no context_window set
    off = CompactionEntry(threshold=0)  # the fitter alone, without summaries
    runtime.settings = dataclasses.replace(runtime.settings, compaction=off)
    async with await runtime.new_session() as session:
        await session.prompt(f"one {LONG}")
        result = await session.prompt(f"two {LONG}")
    trims = [e for e in result.events if isinstance(e, ContextTrimmed)]
    assert [(t.dropped, t.total) for t in trims] == [(2, 3)]
    sent = scripted.requests[-1].messages
    assert len(sent) == 1 and sent[0].text.startswith(CUT_NOTE.format(n=2))
    assert scripted.built[0].context_window is None


async def test_a_larger_model_switched_to_gets_its_larger_window(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("first", "second")
    runtime = make_runtime(model="gpt-3.5-turbo")
    async with await runtime.new_session() as session:
        await session.prompt(f"one {LONG}")
        session.set_model("gpt-4.1")
        result = await session.prompt(f"two {LONG}")
    assert not any(isinstance(e, ContextTrimmed) for e in result.events)
    assert len(scripted.requests[-1].messages) == 3
