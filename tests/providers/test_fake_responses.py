"""FakeLLMServer speaking OpenAI's Responses API: the streamed event sequence, the whole
response, and a failed one."""

from __future__ import annotations

import json
from typing import Any

import httpx

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall


def _events(server: FakeLLMServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", server.base_url + "/responses", json=body, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = response.read().decode().split("\n\n")
    events = []
    for frame in filter(None, frames):
        name, data = frame.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return events


def test_a_streamed_response_has_the_real_event_sequence() -> None:
    reply = FakeReply(
        text="Hello there",
        tool_calls=[FakeToolCall("shell", {"cmd": "ls"}, id="call_1")],
        usage={"input_tokens": 7, "output_tokens": 3},
    )
    with FakeLLMServer([reply]) as server:
        events = _events(server, {"model": "m", "stream": True, "input": "hi"})
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Hello there"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[0]["content"][0]["text"] == "Hello there"
    assert done[1] == {
        "type": "function_call",
        "id": "fc_fake_0",
        "call_id": "call_1",
        "name": "shell",
        "arguments": '{"cmd": "ls"}',
        "status": "completed",
    }
    completed = events[-1]["response"]
    assert completed["usage"]["input_tokens"] == 7 and completed["usage"]["total_tokens"] == 10
    assert completed["model"] == "m" and completed["output"] == done


def test_a_whole_response_and_a_failed_stream() -> None:
    with FakeLLMServer([FakeReply(text="ok"), FakeReply(error_event="boom")]) as server:
        whole = httpx.post(server.base_url + "/responses", json={"model": "m", "input": "x"})
        failed = _events(server, {"model": "m", "stream": True, "input": "x"})
    body = whole.json()
    assert body["status"] == "completed" and body["output"][0]["content"][0]["text"] == "ok"
    assert failed[-1]["type"] == "response.failed"
    assert failed[-1]["response"]["error"]["message"] == "boom"
