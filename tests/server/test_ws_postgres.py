"""Two servers with nothing on disk in common, sharing one PostgreSQL store (``store_url``): a
client that re-attaches to the other one gets every frame it missed from the store's frame log,
and sees the session and its messages there."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer, FakeReply
from tests.server.support import served


async def test_a_server_on_another_machine_replays_what_was_missed(
    tmp_path: Path, work: Path, pg_url: str
) -> None:
    homes = [tmp_path / "machine-a", tmp_path / "machine-b"]
    for home in homes:
        home.mkdir()
    shared = f'store_url = "{pg_url}"'
    with FakeLLMServer([FakeReply(chunks=[f"p{i} " for i in range(12)])]) as llm:
        async with served(homes[0], work, llm, extra=shared) as first, first.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="go")
            events = await ws.events_until_finished(sid)
        seen = events[3]["seq"]
        async with served(homes[1], work, llm, extra=shared) as second, second.socket() as other:
            resumed = await other.call("agent", type="resume", session_id=sid, after=seen)
            async with second.client() as http:
                described = (await http.get(f"/api/sessions/{sid}")).json()
    replayed = [f["data"] for f in other.seen if f["data"].get("type") == "event"]
    assert [f["seq"] for f in replayed] == [e["seq"] for e in events[4:]]
    assert replayed[-1]["event"]["type"] == "finished"
    assert resumed["replayed"] == len(replayed)
    assert [m["role"] for m in described["messages"]] == ["user", "assistant"]
    assert not any((home / "openheim.db").exists() for home in homes)
