"""A key the model streams one character per delta, in its text and in its thinking, reaches no
client frame, replay or stored frame unredacted (deltas published straight from the run)."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import served

KEY = "sk-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"


async def test_a_key_streamed_a_character_at_a_time_is_redacted_everywhere(
    home: Path, work: Path
) -> None:
    text = f"the key is {KEY} and {KEY}"
    reply = FakeReply(chunks=list(text), reasoning=f"think {KEY} ok", chunk_delay=0.001)
    with FakeLLMServer([reply]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="go")
            events = await ws.events_until_finished(sid)
            async with server.socket() as again:
                await again.call("agent", type="resume", session_id=sid, after=0)
                replayed = [f["data"] for f in again.seen if f["data"].get("type") == "event"]
    for frames in (events, replayed):
        shown = "".join(
            str(f["event"].get("text", "")) for f in frames if "delta" in f["event"]["type"]
        )
        assert KEY not in shown and KEY[:12] not in shown
        assert "the key is " in shown and "think " in shown
        assert KEY not in str(frames)
    assert [f["seq"] for f in replayed] == [f["seq"] for f in events]
