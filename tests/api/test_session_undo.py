"""``Session.undo``: the library's undo on an open session restores the files, rewinds the live
and the stored conversation, and refuses while a prompt runs or when nothing is stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openheim.errors import UndoRefused
from openheim.store import SessionBusy
from openheim.testing import Reply, tool_call
from tests.api.conftest import Blocker, MakeRuntime, Scripted
from tests.api.support import soon
from tests.api.test_undo import history, write


async def test_undo_on_an_open_session_restores_and_rewinds(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, home: Path
) -> None:
    scripted.provider.add(write("a.txt", "one\n"), "first done")
    scripted.provider.add(write("a.txt", "two\n"), "second done", "third done")
    async with await make_runtime(approval="auto").new_session() as session:
        await session.prompt("first")
        await session.prompt("second")
        assert (work / "a.txt").read_text() == "two\n"
        report = await session.undo()
        assert (work / "a.txt").read_text() == "one\n"
        assert report.restored == (str(work / "a.txt"),)
        assert report.turns == 1 and report.kept_messages == len(session.history)
        assert session.history[-1].text == "first done"
        assert session.id is not None
        assert history(home, session.id) == session.history
        (work / "a.txt").write_text("mine\n")
        with pytest.raises(UndoRefused, match="changed outside openheim") as refused:
            await session.undo()
        assert refused.value.paths == (str(work / "a.txt"),)
        assert (work / "a.txt").read_text() == "mine\n"
        forced = await session.undo(force=True)
        assert forced.removed == (str(work / "a.txt"),) and session.history == []
        assert (await session.prompt("third")).text == "third done"


async def test_undo_is_refused_while_a_prompt_runs(
    scripted: Scripted, make_runtime: MakeRuntime, blocker: Blocker
) -> None:
    scripted.provider.add(Reply(tool_calls=[tool_call("block", {"label": "x"})]), "done")
    async with await make_runtime(tools=[blocker.tool]).new_session() as session:
        running = asyncio.create_task(session.prompt("one").result())
        await soon(blocker.started.wait())
        before = list(session.history)
        with pytest.raises(SessionBusy, match="is busy"):
            await session.undo()
        assert session.history == before
        blocker.release.set()
        assert (await soon(running)).text == "done"
        assert (await session.undo()).turns == 1
        assert session.history == []


async def test_an_unsaved_session_cannot_undo(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("hi")
    async with await make_runtime(save_sessions=False).new_session() as session:
        await session.prompt("one")
        with pytest.raises(UndoRefused, match="not stored") as refused:
            await session.undo()
        assert refused.value.hint == "undo needs save_sessions = true"
        assert len(session.history) == 2
