"""Storing, listing and resuming sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import ConfigError
from openheim.messages import Message
from openheim.store import SessionNotFound
from tests.api.conftest import MODEL, MakeRuntime, Scripted


async def test_sessions_are_stored_listed_and_resumed(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, tmp_path: Path
) -> None:
    scripted.provider.add("first answer", "second answer")
    runtime = make_runtime()
    session = await runtime.new_session()
    assert session.id is not None
    await session.prompt("remember this")
    history = list(session.history)
    await session.close()

    listed = runtime.list_sessions()
    assert [record.id for record in listed] == [session.id]
    record = listed[0]
    assert (record.cwd, record.model, record.message_count) == (str(work), MODEL, 2)
    assert [r.id for r in runtime.list_sessions(cwd=work)] == [session.id]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert runtime.list_sessions(cwd=elsewhere) == []

    async with await runtime.resume_session(session.id) as resumed:
        assert resumed.id == session.id
        assert resumed.history == history
        assert resumed.model == MODEL
        await resumed.prompt("go on")
    assert scripted.requests[1].messages[:2] == tuple(history)


async def test_resume_by_unique_prefix(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    scripted.provider.add("answer")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    assert session.id is not None
    async with await runtime.resume_session(session.id[:8]) as resumed:
        assert resumed.id == session.id
        assert len(resumed.history) == 2


async def test_a_fresh_runtime_on_the_same_data_dir_resumes(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("stored")
    async with await make_runtime().new_session() as session:
        await session.prompt("hi")
    assert session.id is not None
    other = make_runtime()
    assert [r.id for r in other.list_sessions()] == [session.id]
    async with await other.resume_session(session.id) as resumed:
        assert resumed.history[-1] == Message.assistant("stored")


async def test_list_sessions_pages_newest_first(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    ids = []
    for n in range(3):
        scripted.provider.add(f"answer {n}")
        async with await runtime.new_session() as session:
            await session.prompt(f"prompt {n}")
        ids.append(session.id)
    newest = runtime.list_sessions(limit=2)
    assert [r.id for r in newest] == ids[::-1][:2]
    rest = runtime.list_sessions(before=newest[-1].updated_at)
    assert [r.id for r in rest] == ids[:1]


async def test_unsaved_sessions_have_no_id_and_are_not_listed(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("not stored")
    runtime = make_runtime(save_sessions=False)
    async with await runtime.new_session() as session:
        assert session.id is None
        assert (await session.prompt("hi")).text == "not stored"
        assert len(session.history) == 2
    assert runtime.list_sessions() == []
    with pytest.raises(ConfigError, match="session saving"):
        await runtime.resume_session("anything")


async def test_resuming_an_unknown_session_fails(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    scripted.provider.add("stored")
    runtime = make_runtime()
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    with pytest.raises(SessionNotFound):
        await runtime.resume_session("deadbeef-not-a-session")
    assert [r.id for r in runtime.list_sessions()] == [session.id]
