"""A session resumed by a prefix of its id while it is open in the server is the open one: its
clients see one numbering of its frames, whichever id form each attached with."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.server.support import served


async def test_resuming_an_open_session_by_prefix_attaches_to_it(home: Path, work: Path) -> None:
    with FakeLLMServer(["one", "two"]) as llm:
        async with served(home, work, llm) as server, server.socket() as first:
            sid = (await first.call("agent", type="open"))["session_id"]
            await first.call("agent", type="prompt", session_id=sid, text="hi")
            before = await first.events_until_finished(sid)
            async with server.socket() as second:
                resumed = await second.call("agent", type="resume", session_id=sid[:8])
                await second.call("agent", type="prompt", session_id=sid, text="again")
                seen_second = await second.events_until_finished(sid)
            seen_first = await first.events_until_finished(sid)
    assert resumed["session_id"] == sid and resumed["seq"] == before[-1]["seq"]
    assert [f["seq"] for f in seen_first] == [f["seq"] for f in seen_second]
    assert seen_first[0]["seq"] == before[-1]["seq"] + 1


async def test_two_clients_resuming_a_stored_session_at_once_share_it(
    home: Path, work: Path
) -> None:
    with FakeLLMServer(["one", "two"]) as llm:
        async with served(home, work, llm) as server:
            async with server.socket() as ws:
                sid = (await ws.call("agent", type="open"))["session_id"]
                await ws.call("agent", type="prompt", session_id=sid, text="hi")
                await ws.events_until_finished(sid)
                await ws.call("agent", type="close", session_id=sid)
            async with server.socket() as first, server.socket() as second:
                await first.send("agent", type="resume", session_id=sid)
                await second.send("agent", type="resume", session_id=sid)
                opened = [
                    await ws.until(lambda d: d.get("type") == "opened") for ws in (first, second)
                ]
                await first.call("agent", type="prompt", session_id=sid, text="again")
                seen = [await ws.events_until_finished(sid) for ws in (first, second)]
    assert [frame["data"]["seq"] for frame in opened] == [opened[0]["data"]["seq"]] * 2
    assert [f["seq"] for f in seen[0]] == [f["seq"] for f in seen[1]]
