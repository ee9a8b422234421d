"""A client attaching to one replica while another runs the session's prompt is told what a
single server would tell it: the approval request still waiting (even when ``after`` is past
it), that the session is busy, and each ``session_busy`` change of that prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import Socket
from tests.server.test_replicas import _is, _write, replicas


def _asked(sock: Socket) -> list[dict[str, Any]]:
    """The approval requests the client got (sent before the reply that attached it)."""
    return [f["data"] for f in sock.seen if f["data"].get("type") == "approval_request"]


async def test_a_pending_approval_is_sent_again_on_another_replica(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [_write("a.txt"), FakeReply(text="done")]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            asked = (await runner.until(_is("approval_request")))["data"]
            async with b.socket() as late:
                opened = await late.call("agent", type="resume", session_id=sid, after=asked["seq"])
                again = _asked(late)[-1]
                answer = {"approval_id": again["approval_id"], "choice": "once"}
                assert (await late.call("agent", type="approve", session_id=sid, **answer))[
                    "type"
                ] == "ok"
                events = await late.events_until_finished(sid)
            await runner.events_until_finished(sid)
    assert opened["replayed"] == 0
    assert again == asked
    assert events[-1]["event"]["type"] == "finished"
    assert (work / "a.txt").exists()


async def test_an_answered_approval_is_not_sent_again(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    script = [_write("a.txt"), _write("b.txt"), FakeReply(text="done")]
    with FakeLLMServer(script) as llm, replicas(tmp_path, work, llm, pg_url, 2) as (a, b):
        async with a.socket() as runner:
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            first = (await runner.until(_is("approval_request")))["data"]
            answer = {"approval_id": first["approval_id"], "choice": "once"}
            await runner.call("agent", type="approve", session_id=sid, **answer)
            second = (await runner.until(_is("approval_request")))["data"]
            async with b.socket() as late:
                await late.call("agent", type="resume", session_id=sid, after=second["seq"])
                again = _asked(late)
                await runner.call("agent", type="cancel", session_id=sid)
                await late.events_until_finished(sid)
            await runner.events_until_finished(sid)
    assert again == _asked(late) == [second]


async def test_a_prompt_on_another_replica_marks_the_session_busy(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    with (
        FakeLLMServer([_write("a.txt")]) as llm,
        replicas(tmp_path, work, llm, pg_url, 2) as (a, b),
    ):
        async with a.socket() as runner, b.socket() as watcher:
            assert (await watcher.call("system", type="watch_busy"))["type"] == "watching_busy"
            sid = (await runner.call("agent", type="open"))["session_id"]
            await runner.call("agent", type="prompt", session_id=sid, text="go")
            began = (await watcher.until(_is("session_busy")))["data"]
            await runner.until(_is("approval_request"))
            listed = {row["id"]: row["busy"] for row in b.get("/api/sessions")["sessions"]}
            async with b.socket() as late:
                opened = await late.call("agent", type="resume", session_id=sid, after=0)
            await runner.call("agent", type="cancel", session_id=sid)
            ended = (await watcher.until(_is("session_busy")))["data"]
            await runner.events_until_finished(sid)
    assert opened["busy"] is True and listed[sid] is True
    assert (began["session_id"], began["busy"]) == (sid, True)
    assert (ended["session_id"], ended["busy"]) == (sid, False)
