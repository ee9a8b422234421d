"""The same script of inputs (``tests/parity/script.py``: a skill command, a template with
an argument, an ``@file`` mention, a hard-linked ``@file``, a switch to a listed and to an
unlisted model, a refused write) driven through the REPL, the terminal UI, ACP, ``/ws`` and
the gateway against one FakeLLMServer each: the same request reaches the model, or the same
refusal comes back, on every surface, except where the script's table names a difference by
design and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer
from tests.parity.drivers import opened
from tests.parity.script import (
    EXCEPTIONS,
    REPLIES,
    STEPS,
    SURFACES,
    Outcome,
    expected,
    outcome,
    prepare,
)


async def script_outcomes(surface: str, home: Path, work: Path) -> dict[str, Outcome]:
    """Each step's outcome on ``surface``, the steps run in order in one session."""
    prepare(home, work)
    found: dict[str, Outcome] = {}
    with FakeLLMServer(list(REPLIES)) as llm:
        async with opened(surface, home, work, llm) as driver:
            for step in STEPS:
                before = len(llm.requests)
                said = await driver.run(step.lines)
                found[step.name] = outcome(step, llm.requests[before:], said, work)
    return found


@pytest.mark.parametrize("surface", SURFACES)
async def test_the_script_comes_to_the_same_on_every_surface(
    surface: str, home: Path, work: Path
) -> None:
    found = await script_outcomes(surface, home, work)
    assert found == {step.name: expected(surface, step) for step in STEPS}


def test_every_exception_names_a_surface_a_step_and_a_reason() -> None:
    steps = {step.name for step in STEPS}
    for (surface, step), (_, why) in EXCEPTIONS.items():
        assert surface in SURFACES and step in steps and why
