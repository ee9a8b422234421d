"""Renders a ``FakeReply`` in the OpenAI chat-completions wire format.

``stream_events`` gives the ``data:`` payloads of a streamed answer (``chat.completion.chunk``
objects, then ``[DONE]``), ``completion`` the body of a non-streamed one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from openheim.testing.fake_replies import (
    DEFAULT_USAGE,
    FakeReply,
    FakeToolCall,
    RecordedRequest,
    split_fragments,
    split_words,
)
from openheim.testing.fake_wire import NewId, WireFormat

DONE = "[DONE]"


def stream_events(
    reply: FakeReply, request: RecordedRequest, new_id: Callable[[], str]
) -> list[str]:
    """Every ``data:`` payload of the streamed reply, in order."""
    if reply.raw_events is not None:
        return [e if isinstance(e, str) else json.dumps(e) for e in reply.raw_events]
    model = _model(request)
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"reasoning_content": piece} for piece in split_words(reply.reasoning)]
    deltas += [{"content": piece} for piece in reply.text_pieces]
    for index, call in enumerate(reply.tool_calls):
        deltas += _tool_call_deltas(index, call, _call_id(call, new_id), reply.repeat_tool_ids)
    events = [_chunk(model, delta) for delta in deltas]
    if reply.error_event is not None:
        return [*map(json.dumps, events), json.dumps({"error": _error_object(reply.error_event)})]
    events.append(_chunk(model, {}, reply.finish))
    options = request.body.get("stream_options") if isinstance(request.body, dict) else None
    if isinstance(options, dict) and options.get("include_usage"):
        events.append({**_chunk(model, {}), "choices": [], "usage": _usage(reply)})
    return [*map(json.dumps, events), DONE]


def completion(
    reply: FakeReply, request: RecordedRequest, new_id: Callable[[], str]
) -> dict[str, Any]:
    """The body of a non-streamed answer (a ``chat.completion`` or an ``{"error": ...}``)."""
    if reply.error_event is not None:
        return {"error": _error_object(reply.error_event)}
    message: dict[str, Any] = {"role": "assistant", "content": reply.full_text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            _without_empty_id(
                {
                    "id": _call_id(call, new_id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text},
                }
            )
            for call in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(request),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
        "usage": _usage(reply),
    }


def _tool_call_deltas(
    index: int, call: FakeToolCall, call_id: str, repeat: bool
) -> list[dict[str, Any]]:
    """The opening fragment (id, name, no arguments), then the arguments in pieces."""
    ident = _without_empty_id({"index": index, "id": call_id, "type": "function"})
    deltas = [{"tool_calls": [{**ident, "function": {"name": call.name, "arguments": ""}}]}]
    for piece in split_fragments(call.arguments_text):
        fragment: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
        if repeat:
            fragment = {**ident, "function": {"name": call.name, "arguments": piece}}
        deltas.append({"tool_calls": [fragment]})
    return deltas


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _call_id(call: FakeToolCall, new_id: Callable[[], str]) -> str:
    return new_id() if call.id is None else call.id


def _without_empty_id(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if not (k == "id" and v == "")}


def _model(request: RecordedRequest) -> str:
    body = request.body
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) and model else "fake-model"


def _usage(reply: FakeReply) -> dict[str, Any]:
    return dict(reply.usage if reply.usage is not None else DEFAULT_USAGE)


def _error_object(error: Any) -> Any:
    return {"message": error, "type": "fake_error"} if isinstance(error, str) else dict(error)


def _frames(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> list[str]:
    return [f"data: {payload}" for payload in stream_events(reply, request, new_id)]


OPENAI = WireFormat(
    name="openai",
    matches=lambda r: r.method == "POST" and r.path.endswith("/chat/completions"),
    wants_stream=lambda r: r.wants_stream,
    stream_frames=_frames,
    completion=completion,
    error_body=lambda reply: reply.error_json(),
)
"""OpenAI chat completions: ``POST .../chat/completions``."""
