"""Busy sessions: ``watch_busy`` clients hear each turn begin and end (``session_busy``), the
session list says ``busy`` while a turn runs, and clients that did not ask hear nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.server.support import served


def busy_frame(data: dict[str, Any]) -> bool:
    return data.get("type") == "session_busy"


async def test_a_turn_is_told_busy_then_idle_and_listed_busy_while_it_runs(
    home: Path, work: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "a.txt", "content": "a\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), "done"]) as llm:
        async with (
            served(home, work, llm) as server,
            server.client() as http,
            server.socket() as watcher,
            server.socket() as worker,
            server.socket() as quiet,
        ):
            assert (await watcher.call("system", type="watch_busy"))["type"] == "watching_busy"
            opened = await worker.call("agent", type="open")
            key = opened["session_id"]
            await quiet.call("agent", type="resume", session_id=key)
            await worker.call("agent", type="prompt", session_id=key, text="write")
            began = await watcher.until(busy_frame)
            asked = await worker.until(lambda d: d.get("type") == "approval_request")
            listed = (await http.get("/api/sessions")).json()["sessions"]
            assert [(s["id"], s["busy"]) for s in listed] == [(key, True)]
            await worker.call(
                "agent",
                type="approve",
                session_id=key,
                approval_id=asked["data"]["approval_id"],
                choice="reject",
            )
            ended = await watcher.until(busy_frame)
            await quiet.events_until_finished(key)
            after = (await http.get("/api/sessions")).json()["sessions"]
    assert began["channel"] == "system"
    assert began["data"] == {"type": "session_busy", "session_id": key, "busy": True}
    assert ended["data"] == {"type": "session_busy", "session_id": key, "busy": False}
    assert [s["busy"] for s in after] == [False]
    assert not [f for f in quiet.seen + worker.seen if busy_frame(f["data"])]


async def test_an_unknown_system_request_names_watch_busy(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            await ws.send("system", type="watch_everything")
            error = await ws.until(lambda d: d.get("type") == "error")
    assert error["data"]["message"] == "unknown system request 'watch_everything'"
    assert error["data"]["hint"] == "the system channel answers ping and watch_busy"
