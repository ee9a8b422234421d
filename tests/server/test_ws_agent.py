"""The ``agent`` channel of ``/ws`` through a real uvicorn against ``FakeLLMServer``."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.server.support import served


def write(name: str) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": "hi\n"})])


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"]["type"] for e in events]


async def test_reject_always_with_a_reason_tells_the_model_and_is_not_asked_again(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([write("a.txt"), write("a.txt"), "gave up"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="write")
            request = (await ws.until(lambda d: d.get("type") == "approval_request"))["data"]
            answer = {"approval_id": request["approval_id"], "choice": "reject_always"}
            reason = "use notes.md instead"
            await ws.call("agent", type="approve", session_id=sid, reason=reason, **answer)
            events = await ws.events_until_finished(sid)
            bad = await ws.call("agent", type="approve", session_id=sid, reason=7, **answer)
        told = [m["content"] for m in llm.requests[1].messages if m.get("role") == "tool"]
        again = [m["content"] for m in llm.requests[2].messages if m.get("role") == "tool"]
    assert request["title"] == "Allow openheim to write a.txt?"
    assert request["labels"]["reject_always"] == "reject always" and "+hi" in request["detail"]
    assert told == [
        "Error: denied: the user rejected this tool call and will reject calls like it for "
        "the rest of the session, saying: use notes.md instead"
    ]
    assert len(again) == 2 and "denied" in again[1]  # the second call was not asked about
    assert sum(1 for f in ws.seen if f["data"].get("type") == "approval_request") == 1
    statuses = [e["event"]["status"] for e in events if e["event"]["type"] == "tool_result"]
    assert statuses == ["denied", "denied"] and not (work / "a.txt").exists()
    assert bad["type"] == "error" and "reason" in bad["message"]


async def test_a_prompt_streams_numbered_events(home: Path, work: Path) -> None:
    reply = FakeReply(chunks=["Hel", "lo ", "there"], reasoning="hmm")
    with FakeLLMServer([reply]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            opened = await ws.call("agent", type="open")
            sid = opened["session_id"]
            assert opened["type"] == "opened" and opened["model"] == "fake-model"
            prompted = await ws.call("agent", type="prompt", session_id=sid, text="Hi")
            assert prompted["type"] == "ok"
            events = await ws.events_until_finished(sid)
    assert kinds(events)[0] == "session_started"
    assert "thinking_delta" in kinds(events)
    deltas = "".join(e["event"]["text"] for e in events if e["event"]["type"] == "text_delta")
    assert deltas == "Hello there"
    assert events[-1]["event"]["stop_reason"] == "end_turn"
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


async def test_approvals_once_always_and_reject(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [
        write("a.txt"),
        write("b.txt"),
        "done",
        write("c.txt"),
        write("d.txt"),
        "done 2",
    ]
    with FakeLLMServer(replies) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="write")
            asked = []
            for choice in ("once", "reject"):
                request = await ws.until(lambda d: d.get("type") == "approval_request")
                asked.append(request["data"]["arguments"]["path"])
                answer = {"approval_id": request["data"]["approval_id"], "choice": choice}
                approved = await ws.call("agent", type="approve", session_id=sid, **answer)
                assert approved["type"] == "ok"
            await ws.events_until_finished(sid)
            first = [f["data"] for f in ws.seen if f["data"].get("type") == "event"]
            await ws.call("agent", type="prompt", session_id=sid, text="more")
            request = await ws.until(lambda d: d.get("type") == "approval_request")
            answer = {"approval_id": request["data"]["approval_id"], "choice": "always"}
            await ws.call("agent", type="approve", session_id=sid, **answer)
            second = await ws.events_until_finished(sid)
            stale = await ws.call("agent", type="approve", session_id=sid, **answer)
    assert asked == ["a.txt", "b.txt"]
    assert request["data"]["choices"] == ["once", "always", "reject", "reject_always"]
    assert (work / "a.txt").exists() and not (work / "b.txt").exists()
    assert (work / "c.txt").exists() and (work / "d.txt").exists()
    statuses = [e["event"]["status"] for e in first if e["event"]["type"] == "tool_result"]
    assert statuses == ["completed", "denied"]
    assert second[-1]["event"]["stop_reason"] == "end_turn"
    assert stale["type"] == "error" and "pending" in stale["message"]


async def test_cancel_ends_the_turn_as_cancelled(home: Path, work: Path) -> None:
    slow = FakeReply(chunks=["a"] * 200, chunk_delay=0.05)
    with FakeLLMServer([slow]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="go")
            await ws.until(lambda d: d.get("event", {}).get("type") == "text_delta")
            assert (await ws.call("agent", type="cancel", session_id=sid))["type"] == "ok"
            events = await ws.events_until_finished(sid)
    assert events[-1]["event"]["stop_reason"] == "cancelled"


async def test_a_dropped_socket_reattaches_and_misses_nothing(home: Path, work: Path) -> None:
    slow = FakeReply(chunks=[f"w{i} " for i in range(40)], chunk_delay=0.02)
    with FakeLLMServer([slow]) as llm:
        async with served(home, work, llm) as server:
            async with server.socket() as first:
                sid = (await first.call("agent", type="open"))["session_id"]
                await first.call("agent", type="prompt", session_id=sid, text="go")
                seen = [await first.until(lambda d: d.get("type") == "event") for _ in range(5)]
            last = seen[-1]["data"]["seq"]
            live = server.context.hub.get(sid)
            assert live is not None and live.task is not None
            await asyncio.wait_for(asyncio.shield(live.task), 10)  # it ran on with no one attached
            async with server.socket() as second:
                resumed = await second.call("agent", type="resume", session_id=sid, after=last)
            rest = [f["data"] for f in second.seen if f["data"].get("type") == "event"]
    assert resumed["type"] == "opened" and resumed["replayed"] == len(rest)
    assert rest[-1]["event"]["type"] == "finished"
    seqs = [f["data"]["seq"] for f in seen] + [e["seq"] for e in rest]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    text = "".join(
        f["event"]["text"]
        for f in [s["data"] for s in seen] + rest
        if f["event"]["type"] == "text_delta"
    )
    assert text == "".join(f"w{i} " for i in range(40))


async def test_several_sessions_on_one_socket_and_a_model_switch(home: Path, work: Path) -> None:
    with FakeLLMServer(["one", "two"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            a = (await ws.call("agent", type="open"))["session_id"]
            b = (await ws.call("agent", type="open", model="fake-small"))["session_id"]
            switched = await ws.call("agent", type="set_model", session_id=a, model="fake-small")
            await ws.call("agent", type="prompt", session_id=a, text="first")
            first = await ws.events_until_finished(a)
            await ws.call("agent", type="prompt", session_id=b, text="second")
            second = await ws.events_until_finished(b)
            closed = await ws.call("agent", type="close", session_id=a)
            gone = await ws.call("agent", type="prompt", session_id=a, text="again")
    assert a != b and switched["model"] == "fake-small"
    assert [r.body["model"] for r in llm.requests] == ["fake-small", "fake-small"]
    assert first[-1]["event"]["text"] == "one" and second[-1]["event"]["text"] == "two"
    assert closed["type"] == "ok" and gone["type"] == "error"


async def test_resume_a_stored_session_and_attach_a_file(home: Path, work: Path) -> None:
    (work / "notes.txt").write_text("remember the milk\n")
    with FakeLLMServer(["noted", "again"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            text = "mail me@example.com after you read\n@notes.txt"
            await ws.call("agent", type="prompt", session_id=sid, text=text)
            await ws.events_until_finished(sid)
            await ws.call("agent", type="close", session_id=sid)
            resumed = await ws.call("agent", type="resume", session_id=sid)
            await ws.call("agent", type="prompt", session_id=sid, text="and now?")
            events = await ws.events_until_finished(sid)
            escape = await ws.call("agent", type="prompt", session_id=sid, text="@../x")
            unknown = await ws.call("agent", type="resume", session_id="0" * 36)
    assert resumed["session_id"] == sid and events[-1]["event"]["text"] == "again"
    first_prompt = llm.requests[0].body["messages"][-1]["content"]
    assert "remember the milk" in str(first_prompt) and 'path="notes.txt"' in str(first_prompt)
    assert "me@example.com" in str(first_prompt)
    assert len(llm.requests[1].body["messages"]) > len(llm.requests[0].body["messages"])
    assert escape["type"] == "error" and "outside the work dir" in escape["message"]
    assert unknown["type"] == "error"


async def test_bad_agent_requests_get_errors_with_the_id(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            unknown = await ws.call("agent", type="dance")
            missing = await ws.call("agent", type="prompt", text="x")
            closed = await ws.call("agent", type="prompt", session_id="nope", text="x")
            sid = (await ws.call("agent", type="open"))["session_id"]
            empty = await ws.call("agent", type="prompt", session_id=sid, text=" ")
            image = await ws.call(
                "agent", type="prompt", session_id=sid, text="x",
                images=[{"mime_type": "text/html", "data": "PGI+"}],
            )  # fmt: skip
            choice = await ws.call(
                "agent", type="approve", session_id=sid, approval_id="x", choice="maybe"
            )
    for reply in (unknown, missing, closed, empty, image, choice):
        assert reply["type"] == "error" and reply["message"] and reply["hint"]


async def test_another_server_on_the_same_store_replays_what_was_missed(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([FakeReply(chunks=[f"p{i} " for i in range(12)])]) as llm:
        async with served(home, work, llm) as first, first.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="go")
            events = await ws.events_until_finished(sid)
        seen = events[3]["seq"]
        async with served(home, work, llm) as second, second.socket() as other:
            resumed = await other.call("agent", type="resume", session_id=sid, after=seen)
            stored = second.context.store.frames.last(sid)
            async with second.client() as http:
                described = (await http.get(f"/api/sessions/{sid}")).json()
    replayed = [f["data"] for f in other.seen if f["data"].get("type") == "event"]
    assert [f["seq"] for f in replayed] == [e["seq"] for e in events[4:]]
    assert replayed[-1]["event"]["type"] == "finished"
    assert resumed["replayed"] == len(replayed) and stored == events[-1]["seq"]
    assert described["seq"] == stored


async def test_detach_stops_the_frames_and_images_reach_the_model(home: Path, work: Path) -> None:
    pixel = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
        "RU5ErkJggg=="
    )
    with FakeLLMServer(["a picture", "second"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            image = {"mime_type": "image/png", "data": pixel}
            await ws.call("agent", type="prompt", session_id=sid, text="look", images=[image])
            await ws.events_until_finished(sid)
            assert (await ws.call("agent", type="detach", session_id=sid))["type"] == "ok"
            live = server.context.hub.get(sid)
            assert live is not None and not live.subscribers
            await ws.call("system", type="ping")
    content = llm.requests[0].body["messages"][-1]["content"]
    assert any(part.get("type") == "image_url" for part in content)
    assert pixel in str(content)


async def test_an_idle_session_with_no_one_attached_is_closed(home: Path, work: Path) -> None:
    with FakeLLMServer(["done"]) as llm:
        async with served(home, work, llm) as server:
            server.context.hub.idle_close = 0.05
            async with server.socket() as ws:
                sid = (await ws.call("agent", type="open"))["session_id"]
                live = server.context.hub.get(sid)
                assert live is not None and live.session is not None
                closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                live.session.on_close(lambda _: closed.set_result(None))
                await ws.call("agent", type="prompt", session_id=sid, text="go")
                await ws.events_until_finished(sid)
                assert not closed.done()  # attached: it stays open
            await asyncio.wait_for(closed, 10)
            assert server.context.hub.get(sid) is None
            async with server.socket() as again:
                resumed = await again.call("agent", type="resume", session_id=sid)
    assert resumed["type"] == "opened"


async def test_a_client_that_falls_too_far_behind_is_disconnected(home: Path, work: Path) -> None:
    from openheim.server import ws as ws_module

    with FakeLLMServer([FakeReply(chunks=["a "] * 10)]) as llm:
        async with served(home, work, llm) as server:
            async with server.socket() as first:
                sid = (await first.call("agent", type="open"))["session_id"]
                await first.call("agent", type="prompt", session_id=sid, text="go")
                await first.events_until_finished(sid)
            saved, ws_module.MAX_PENDING = ws_module.MAX_PENDING, 3
            try:
                async with server.socket() as late:
                    await late.send("agent", type="resume", session_id=sid, after=0)
                    assert late.conn is not None
                    await asyncio.wait_for(late.conn.wait_closed(), 10)
            finally:
                ws_module.MAX_PENDING = saved
    assert late.conn.close_code == 1013


async def test_open_with_an_unknown_profile_or_skill_is_refused(home: Path, work: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            profile = await ws.call("agent", type="open", agent="no-such-profile")
            skill = await ws.call("agent", type="open", skills=["no-such-skill"])
            bad = await ws.call("agent", type="open", skills="not-a-list")
            still = await ws.call("agent", type="open")
    for reply in (profile, skill, bad):
        assert reply["type"] == "error" and reply["message"]
    assert "no-such-profile" in profile["message"] and "no-such-skill" in skill["message"]
    assert still["type"] == "opened"


async def test_secrets_never_reach_the_client(home: Path, work: Path) -> None:
    key = f"plainkey{uuid.uuid4().hex}"
    (work / "keys.txt").write_text(f"the key is {key}\n")
    reply = FakeReply(chunks=["The key: ", key[:10], key[10:], " done."], reasoning=f"r {key}")
    with FakeLLMServer([reply]) as llm:
        provider = f'api_key = "{key}"'
        async with served(home, work, llm, provider=provider) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            await ws.call("agent", type="prompt", session_id=sid, text="tell me")
            await ws.events_until_finished(sid)
            read = await ws.call("fs", type="read", path="keys.txt")
    everything = json.dumps(ws.seen)
    assert key not in everything and key[10:] not in everything
    assert "[REDACTED]" in everything and "[REDACTED]" in read["content"]


@pytest.mark.parametrize(
    "model", ["fake-unlisted", "--help", " fake-small", "fake-small\n", "x" * 5000]
)
async def test_set_model_refuses_what_the_provider_does_not_offer(
    home: Path, work: Path, model: str
) -> None:
    with FakeLLMServer(["still here"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            refused = await ws.call("agent", type="set_model", session_id=sid, model=model)
            await ws.call("agent", type="prompt", session_id=sid, text="hi")
            await ws.events_until_finished(sid)
    assert refused["type"] == "error", refused
    assert "fake-model, fake-small" in refused["message"] and len(refused["message"]) < 300
    assert [r.body["model"] for r in llm.requests] == ["fake-model"]
