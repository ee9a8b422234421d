"""Renders a ``FakeReply`` in OpenAI's Responses API wire format (``POST .../responses``).

A streamed answer is the real event sequence, each frame named by its ``event:`` line:
``response.created``, then one output item per part of the reply -- the reasoning, the message
(``response.output_text.delta`` pieces) and each function call (``response.function_call_
arguments.delta`` fragments) -- each opened by ``response.output_item.added`` and closed by
``response.output_item.done`` with the whole item, and ``response.completed`` with the usage
(``input_tokens``, ``output_tokens`` and their details). ``error_event`` ends the stream with
``response.failed`` instead. Codex speaks this format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest, split_words
from openheim.testing.fake_wire import NewId, WireFormat

DEFAULT_USAGE: Mapping[str, int] = {"input_tokens": 10, "output_tokens": 5}

Item = tuple[dict[str, Any], list[dict[str, Any]]]
"""An output item as ``response.output_item.done`` carries it, and the delta events before."""


def stream_frames(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> list[str]:
    """Every SSE frame of the streamed reply, in order."""
    if reply.raw_events is not None:
        return [f"data: {e}" if isinstance(e, str) else _frame(e) for e in reply.raw_events]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response(request, [], "in_progress")}
    ]
    items = _items(reply, new_id)
    for index, (item, deltas) in enumerate(items):
        opened = {**item, "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        events += [{**d, "output_index": index, "item_id": item["id"]} for d in deltas]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    if reply.error_event is not None:
        failed = {**_response(request, [], "failed"), "error": _error(reply.error_event)}
        events.append({"type": "response.failed", "response": failed})
    else:
        whole = {**completion(reply, request, new_id), "output": [i for i, _ in items]}
        events.append({"type": "response.completed", "response": whole})
    return [_frame(event) for event in events]


def completion(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> dict[str, Any]:
    """The body of a non-streamed answer: one ``response`` object."""
    if reply.error_event is not None:
        return {**_response(request, [], "failed"), "error": _error(reply.error_event)}
    output = [item for item, _ in _items(reply, new_id)]
    return {**_response(request, output, "completed"), "usage": _usage(reply)}


def _items(reply: FakeReply, new_id: NewId) -> list[Item]:
    items: list[Item] = []
    if reply.reasoning:
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        items.append(({"type": "reasoning", "id": "rs_fake", "summary": summary}, []))
    if reply.full_text:
        text = {"type": "output_text", "text": reply.full_text, "annotations": []}
        message = {
            "type": "message",
            "id": "msg_fake",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
        deltas = [
            {"type": "response.output_text.delta", "content_index": 0, "delta": piece}
            for piece in reply.text_pieces
        ]
        items.append((message, deltas))
    items += [_function_call(index, call, new_id) for index, call in enumerate(reply.tool_calls)]
    return items


def _function_call(index: int, call: FakeToolCall, new_id: NewId) -> Item:
    item = {
        "type": "function_call",
        "id": f"fc_fake_{index}",
        "call_id": call.id or new_id(),
        "name": call.name,
        "arguments": call.arguments_text,
        "status": "completed",
    }
    pieces = split_words(call.arguments_text) or [""]
    deltas = [{"type": "response.function_call_arguments.delta", "delta": p} for p in pieces]
    return item, deltas


def _response(request: RecordedRequest, output: list[Any], status: str) -> dict[str, Any]:
    body = request.body
    model = body.get("model") if isinstance(body, dict) else None
    return {
        "id": "resp_fake",
        "object": "response",
        "model": model if isinstance(model, str) and model else "fake-model",
        "status": status,
        "output": output,
    }


def _usage(reply: FakeReply) -> dict[str, Any]:
    usage = dict(reply.usage if reply.usage is not None else DEFAULT_USAGE)
    usage.setdefault("input_tokens_details", {"cached_tokens": 0})
    usage.setdefault("output_tokens_details", {"reasoning_tokens": 0})
    usage.setdefault("total_tokens", usage.get("input_tokens", 0) + usage.get("output_tokens", 0))
    return usage


def _error(error: Mapping[str, Any] | str) -> dict[str, Any]:
    return {"code": "server_error", "message": error} if isinstance(error, str) else dict(error)


def _frame(event: Mapping[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}"


RESPONSES = WireFormat(
    name="responses",
    matches=lambda r: r.method == "POST" and r.path.endswith("/responses"),
    wants_stream=lambda r: r.wants_stream,
    stream_frames=stream_frames,
    completion=completion,
    error_body=lambda reply: reply.error_json(),
)
"""OpenAI Responses: ``POST .../responses``."""
