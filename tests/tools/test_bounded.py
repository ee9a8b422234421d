"""Blocking tool work: a cancelled call returns at once and its worker is told to stop; the time
limit ends searches and walks with a note; a worker stuck past the limit is not waited for."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.tools.base import ToolContext
from openheim.tools.builtin import bounded
from openheim.tools.builtin.bounded import Budget, run_bounded
from openheim.tools.builtin.listing import glob, list_dir
from openheim.tools.builtin.search import search
from tests.tools.support import ok

BOUND = 10.0


def _never(budget: Budget) -> str:
    raise AssertionError("the work finished in time; overrun must not be called")


async def test_cancelling_returns_at_once_and_tells_the_worker(tmp_path: Path) -> None:
    started, stopped = threading.Event(), threading.Event()

    def work(budget: Budget) -> str:
        started.set()
        if budget.wait(BOUND):  # only a cancellation can end this wait early
            stopped.set()
        return "done"

    call = asyncio.create_task(run_bounded(work, _never))
    assert await asyncio.to_thread(started.wait, BOUND)
    begun = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - begun < 1.0
    assert await asyncio.to_thread(stopped.wait, BOUND)


async def test_work_runs_in_a_thread_of_its_own() -> None:
    def work(budget: Budget) -> tuple[str, bool]:
        thread = threading.current_thread()
        return thread.name, thread.daemon  # not a daemon: killed inside RE2, it would abort

    assert await run_bounded(work, _never) == ("openheim-tool", False)


async def test_a_worker_past_the_limit_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "TIME_LIMIT", 0.05)
    monkeypatch.setattr(bounded, "GRACE", 0.05)
    release = threading.Event()
    budgets: list[Budget] = []

    def stuck(budget: Budget) -> str:
        budgets.append(budget)
        release.wait(BOUND)  # one long unit of work that never checks the budget
        return "late"

    begun = time.monotonic()
    try:
        result = await run_bounded(stuck, lambda budget: budget.note("narrow it"))
    finally:
        release.set()
    assert result == "[stopped after 0.05 s; narrow it]"
    assert time.monotonic() - begun < 1.0
    assert budgets[0].expired and budgets[0].is_set()


async def test_the_budget_expires_by_itself() -> None:
    budget = Budget(0)
    assert budget.is_set() and budget.expired
    fresh = Budget(BOUND)
    assert not fresh.is_set() and not fresh.expired
    fresh.set()
    assert fresh.is_set() and not fresh.expired  # cancelled, not out of time


async def test_errors_of_the_work_reach_the_caller() -> None:
    def failing(budget: Budget) -> str:
        raise ToolError("no such thing", hint="look elsewhere")

    with pytest.raises(ToolError, match="no such thing"):
        await run_bounded(failing, _never)


@pytest.fixture
def no_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bounded call is out of time at its first check."""
    monkeypatch.setattr(bounded, "TIME_LIMIT", 0)


@pytest.mark.usefixtures("no_time")
async def test_search_and_glob_say_they_stopped(ctx: ToolContext, work: Path) -> None:
    for name in ("a/x.py", "b/y.py"):
        (work / name).parent.mkdir()
        (work / name).write_text("hit\n")
    found = await ok(search, ctx, pattern="hit")
    assert found == (
        "no matches for 'hit' in 0 files under .\n"
        "[stopped after 0 s; narrow the pattern, path or glob]"
    )
    listed = await ok(glob, ctx, pattern="**/*.py")
    assert listed.splitlines() == [
        "no files match '**/*.py' under .",
        "[stopped after 0 s; narrow the pattern or set path to a subfolder]",
    ]
    with pytest.raises(ToolError, match=r"listing \. did not finish within 0 s"):
        await ok(list_dir, ctx)
