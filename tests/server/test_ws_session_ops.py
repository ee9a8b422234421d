"""``compact``, ``undo`` and ``pin`` on the ``/ws`` agent channel, through a real uvicorn against
``FakeLLMServer``: each acts on the open session through the runtime and replies with the
result, an error frame when refused."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.server.support import Socket, served

LONG = "tell me about it " * 30


def answer(request: RecordedRequest) -> FakeReply:
    """A summary for a compaction; ``write X`` writes a.txt; ``hang`` stalls; else text."""
    if str(request.messages[0].get("content")).startswith("You compact"):
        return FakeReply(text="SUMMARY of the start")
    last = request.messages[-1]
    if last.get("role") == "tool":
        return FakeReply(text="written")
    text = str(last.get("content"))
    if text.startswith("write "):
        call = FakeToolCall("write_file", {"path": "a.txt", "content": text[6:]})
        return FakeReply(tool_calls=[call])
    return FakeReply(text="stalled", hang_at=0) if text == "hang" else FakeReply(text="ok")


async def prompt(ws: Socket, sid: str, text: str) -> None:
    assert (await ws.call("agent", type="prompt", session_id=sid, text=text))["type"] == "ok"
    events = await ws.events_until_finished(sid)
    assert events[-1]["event"]["type"] == "finished"


async def test_undo_restores_the_files_and_rewinds(home: Path, work: Path) -> None:
    auto = 'approval = "auto"'
    with FakeLLMServer(default=answer) as llm:
        async with served(home, work, llm, extra=auto) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            nothing = await ws.call("agent", type="undo", session_id=sid)
            await prompt(ws, sid, "write one")
            await prompt(ws, sid, "write two")
            undone = await ws.call("agent", type="undo", session_id=sid)
            restored = (work / "a.txt").read_text()
            (work / "a.txt").write_text("mine")
            refused = await ws.call("agent", type="undo", session_id=sid)
            kept = (work / "a.txt").read_text()
            bad = await ws.call("agent", type="undo", session_id=sid, turns=0)
            forced = await ws.call("agent", type="undo", session_id=sid, force=True)
            await prompt(ws, sid, "after")
    assert nothing["type"] == "error" and "nothing to undo" in nothing["hint"]
    path = str(work / "a.txt")
    assert undone["type"] == "ok" and restored == "one"
    assert undone["undone"] == {"turns": 1, "restored": [path], "removed": [], "shell_changed": []}
    assert undone["text"] == f"undid 1 turn\nrestored {path}"
    assert refused["type"] == "error" and kept == "mine"
    assert refused["message"] == f"changed outside openheim since the checkpoint: {path}"
    assert "--force" in refused["hint"]
    assert bad["type"] == "error" and "turns must be" in bad["message"]
    assert forced["undone"]["removed"] == [path] and not (work / "a.txt").exists()
    sent = [str(m.get("content")) for m in llm.requests[-1].messages]
    assert sent[-1] == "after" and not any(m.startswith("write ") for m in sent)


async def test_compact_and_pin(home: Path, work: Path) -> None:
    with FakeLLMServer(default=answer) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            nothing = await ws.call("agent", type="compact", session_id=sid)
            await prompt(ws, sid, "use tabs")
            pinned = await ws.call("agent", type="pin", session_id=sid)
            await prompt(ws, sid, f"one {LONG}")
            await prompt(ws, sid, f"two {LONG}")
            done = await ws.call("agent", type="compact", session_id=sid)
            await prompt(ws, sid, "three")
    assert nothing == {"type": "ok", "id": nothing["id"], "compacted": None,
                       "text": "nothing to compact yet"}  # fmt: skip
    assert pinned == {"type": "ok", "id": pinned["id"], "text": "pinned: use tabs"}
    assert done["type"] == "ok" and done["compacted"]["type"] == "context_compacted"
    assert done["compacted"]["method"] == "summary"
    assert done["text"].startswith("compacted ")
    sent = str(llm.requests[-1].messages)
    assert "SUMMARY of the start" in sent and "one tell" not in sent
    assert "use tabs" in sent  # the pinned prompt is sent verbatim


async def test_refused_while_a_prompt_runs(home: Path, work: Path) -> None:
    with FakeLLMServer(default=answer) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="hang")
            replies = [await ws.call("agent", type=kind, session_id=sid) for kind in
                       ("compact", "undo", "pin")]  # fmt: skip
            await ws.call("agent", type="cancel", session_id=sid)
            events = await ws.events_until_finished(sid)
    for reply in replies:
        assert reply["type"] == "error" and "is busy" in reply["message"]
    assert events[-1]["event"]["stop_reason"] == "cancelled"
