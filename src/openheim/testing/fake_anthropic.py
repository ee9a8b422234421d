"""Renders a ``FakeReply`` in the Anthropic Messages wire format.

A streamed answer is the real event sequence, each frame named by its ``event:`` line:
``message_start`` (with the input token counts), a ``ping``, then one content block per part of
the reply (thinking with its ``signature_delta``, each redacted thinking block, the text, each
tool call with its arguments in several ``input_json_delta`` fragments), ``message_delta`` (stop
reason and output tokens) and ``message_stop``. ``error_event`` replaces the last two with an
``error`` event. The reply's ``finish_reason`` and ``usage`` are raw Anthropic values:
``end_turn`` / ``tool_use`` / ``pause_turn`` ..., and ``input_tokens``, ``output_tokens``,
``cache_creation_input_tokens``, ``cache_read_input_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openheim.testing.fake_replies import (
    FakeReply,
    FakeToolCall,
    RecordedRequest,
    split_fragments,
    split_words,
)
from openheim.testing.fake_wire import NewId, WireFormat

DEFAULT_USAGE: Mapping[str, int] = {"input_tokens": 10, "output_tokens": 5}
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def stream_frames(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> list[str]:
    """Every SSE frame of the streamed reply, in order."""
    if reply.raw_events is not None:
        return [_raw_frame(event) for event in reply.raw_events]
    usage = _usage(reply)
    start = {**_message(request, []), "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "ping"},
    ]
    for index, (block, deltas) in enumerate(_blocks(reply, new_id)):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    if reply.error_event is not None:
        events.append(_error(reply.error_event, "api_error"))
    else:
        delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
        output = {"output_tokens": usage.get("output_tokens", 0)}
        events += [
            {"type": "message_delta", "delta": delta, "usage": output},
            {"type": "message_stop"},
        ]
    return [_frame(event) for event in events]


def completion(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> dict[str, Any]:
    """The body of a non-streamed answer: one ``message`` (or an ``error`` object)."""
    if reply.error_event is not None:
        return _error(reply.error_event, "api_error")
    content = [_whole(block, deltas) for block, deltas in _blocks(reply, new_id)]
    return {
        **_message(request, content),
        "stop_reason": _stop_reason(reply),
        "usage": _usage(reply),
    }


def error_body(reply: FakeReply) -> dict[str, Any]:
    """The body of an error status, typed by the status as the real API types it."""
    if isinstance(reply.error_body, Mapping):
        return dict(reply.error_body)
    message = reply.error_body or f"fake server error (HTTP {reply.status})"
    kind = _ERROR_TYPES.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


Block = tuple[dict[str, Any], list[dict[str, Any]]]
"""A content block as ``content_block_start`` opens it, and the deltas that fill it."""


def _blocks(reply: FakeReply, new_id: NewId) -> list[Block]:
    blocks: list[Block] = []
    if reply.reasoning or reply.thinking_signature:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in split_words(reply.reasoning)]
        if reply.thinking_signature:
            deltas.append({"type": "signature_delta", "signature": reply.thinking_signature})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    blocks += [({"type": "redacted_thinking", "data": d}, []) for d in reply.redacted_thinking]
    if reply.full_text:
        deltas = [{"type": "text_delta", "text": piece} for piece in reply.text_pieces]
        blocks.append(({"type": "text", "text": ""}, deltas))
    blocks += [_tool_use(call, new_id) for call in reply.tool_calls]
    return blocks


def _tool_use(call: FakeToolCall, new_id: NewId) -> Block:
    block = {"type": "tool_use", "id": call.id or new_id(), "name": call.name, "input": {}}
    pieces = split_fragments(call.arguments_text, parts=4)
    return block, [{"type": "input_json_delta", "partial_json": p} for p in pieces]


def _whole(block: dict[str, Any], deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """A streamed block with its deltas folded in, as a non-streamed message carries it."""
    whole = dict(block)
    for delta in deltas:
        field = _DELTA_FIELDS[delta["type"]]
        whole[field] = whole.get(field, "") + delta[field]
    if "partial_json" in whole:
        whole["input"] = _object(whole.pop("partial_json"))
    return whole


_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "input_json_delta": "partial_json",
}


def _object(text: str) -> Any:
    """Arguments as the non-streamed API sends them: an object (``{}`` for broken ones)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _message(request: RecordedRequest, content: list[dict[str, Any]]) -> dict[str, Any]:
    body = request.body
    model = body.get("model") if isinstance(body, dict) else None
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model if isinstance(model, str) and model else "fake-model",
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
    }


def _stop_reason(reply: FakeReply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_use" if reply.tool_calls else "end_turn"


def _usage(reply: FakeReply) -> dict[str, Any]:
    return dict(reply.usage if reply.usage is not None else DEFAULT_USAGE)


def _error(error: Mapping[str, Any] | str, kind: str) -> dict[str, Any]:
    """An ``error`` event; a string becomes the message of an error of type ``kind``."""
    detail = {"type": kind, "message": error} if isinstance(error, str) else dict(error)
    return {"type": "error", "error": detail}


def _frame(event: Mapping[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}"


def _raw_frame(event: str | Mapping[str, Any]) -> str:
    """A ``raw_events`` item: a mapping is named by its ``type``; a string is sent as data."""
    return f"data: {event}" if isinstance(event, str) else _frame(event)


ANTHROPIC = WireFormat(
    name="anthropic",
    matches=lambda r: r.method == "POST" and r.path.endswith("/messages"),
    wants_stream=lambda r: r.wants_stream,
    stream_frames=stream_frames,
    completion=completion,
    error_body=error_body,
)
"""Anthropic Messages: ``POST .../messages``."""
