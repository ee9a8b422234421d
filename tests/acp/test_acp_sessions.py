"""Stored sessions over ACP: load replays exactly what was stored, resume does not replay,
list filters and pages, close ends a session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp import RequestError
from acp.helpers import text_block

from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import acp_agent


async def _one_turn(home: Path, work: Path) -> str:
    """A stored session with a question, a read_file call and an answer; returns its id."""
    (work / "notes.txt").write_text("the word is pineapple\n")
    call = FakeToolCall("read_file", {"path": "notes.txt"}, id="read-1")
    replies: list[FakeReply | str] = [
        FakeReply(tool_calls=[call], text="Let me look."),
        "It says pineapple.",
    ]
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("what is the word?")])
            await agent.conn.close_session(session_id=sid)
    return sid


async def test_load_replays_exactly_the_stored_turns(home: Path, work: Path) -> None:
    sid = await _one_turn(home, work)
    async with acp_agent(home, work, None) as agent:
        await agent.start()
        await agent.conn.load_session(cwd=str(work), session_id=sid)
        replayed = [u for s, u in agent.client.updates if s == sid]
    shapes = [
        (u.session_update, getattr(getattr(u, "content", None), "text", None))
        for u in replayed
        if u.session_update != "available_commands_update"
    ]
    assert shapes == [
        ("user_message_chunk", "what is the word?"),
        ("agent_message_chunk", "Let me look."),
        ("tool_call", None),
        ("agent_message_chunk", "It says pineapple."),
    ]
    call = next(u for u in replayed if u.session_update == "tool_call")
    assert (call.tool_call_id, call.status, call.kind) == ("read-1", "completed", "read")
    assert call.raw_input == {"path": "notes.txt"}
    assert "pineapple" in call.content[0].content.text


async def test_a_loaded_session_continues_the_conversation(home: Path, work: Path) -> None:
    sid = await _one_turn(home, work)
    with FakeLLMServer(["Still pineapple."]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            await agent.conn.resume_session(cwd=str(work), session_id=sid)
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("again?")])
            replayed = [u for _, u in agent.client.updates if u.session_update == "tool_call"]
    assert response.stop_reason == "end_turn"
    assert replayed == []  # resume does not replay
    contents = [str(m.get("content")) for m in server.requests[0].messages]
    assert "what is the word?" in contents and contents[-1] == "again?"


async def test_unknown_sessions_are_not_found(home: Path, work: Path) -> None:
    async with acp_agent(home, work, None) as agent:
        await agent.start()
        with pytest.raises(RequestError) as load:
            await agent.conn.load_session(cwd=str(work), session_id="no-such-session")
        with pytest.raises(RequestError) as prompt:
            await agent.conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        with pytest.raises(RequestError) as close:
            await agent.conn.close_session(session_id="no-such-session")
    assert (load.value.code, prompt.value.code, close.value.code) == (-32002, -32002, -32002)
    assert (load.value.data or {})["sessionId"] == "no-such-session"


async def test_close_ends_the_session(home: Path, work: Path) -> None:
    async with acp_agent(home, work, None) as agent:
        await agent.start()
        sid = await agent.new()
        await agent.conn.close_session(session_id=sid)
        with pytest.raises(RequestError) as gone:
            await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
    assert gone.value.code == -32002


async def test_list_filters_by_cwd_and_pages(home: Path, work: Path) -> None:
    other = work / "sub"
    other.mkdir()
    store = open_store(home)
    try:
        for _ in range(57):
            store.create(cwd=str(work), provider="fake", model="fake-model", skills=[])
        for _ in range(3):
            store.create(cwd=str(other), provider="fake", model="fake-model", skills=[])
    finally:
        store.close()
    async with acp_agent(home, work, None) as agent:
        await agent.start()
        first = await agent.conn.list_sessions(cwd=str(work))
        second = await agent.conn.list_sessions(cwd=str(work), cursor=first.next_cursor)
        everything = await agent.conn.list_sessions()
        sub = await agent.conn.list_sessions(cwd=str(other))
        with pytest.raises(RequestError) as bad:
            await agent.conn.list_sessions(cursor="not-a-cursor")
    assert len(first.sessions) == 50 and first.next_cursor is not None
    assert len(second.sessions) == 7 and second.next_cursor is None
    ids = [s.session_id for s in first.sessions + second.sessions]
    assert len(set(ids)) == 57
    assert {s.cwd for s in first.sessions + second.sessions} == {str(work)}
    assert len(everything.sessions) == 50 and everything.next_cursor is not None
    assert len(sub.sessions) == 3
    assert bad.value.code == -32602


async def test_a_session_busy_in_another_process_is_refused_with_its_holder(
    home: Path, work: Path
) -> None:
    sid = await _one_turn(home, work)
    store = open_store(home)
    try:
        with store.acquire(sid):  # this test process holds the session's lease
            async with acp_agent(home, work, None) as agent:
                await agent.start()
                await agent.conn.resume_session(cwd=str(work), session_id=sid)
                with pytest.raises(RequestError) as busy:
                    await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
    finally:
        store.close()
    data = busy.value.data or {}
    assert busy.value.code == -32600
    assert (data["reason"], data["sessionId"], data["pid"]) == ("session_busy", sid, os.getpid())
