"""Renders a ``FakeReply`` in the Gemini ``generateContent`` wire format.

``POST .../models/{model}:streamGenerateContent`` answers with Server-Sent Events, one
``GenerateContentResponse`` per ``data:`` frame: one frame per thought piece (``reasoning``),
per text piece and per function call, the last of them also carrying ``finishReason`` (``STOP``
unless ``finish_reason`` says otherwise) and ``usageMetadata``. ``:generateContent`` answers
with the whole response as one JSON object.

``thinking_signature`` is sent as ``thoughtSignature`` where Gemini puts it: on the last thought
part, else on the first function call (as Gemini 3 does), else on the last text part. Error
bodies have Google's shape ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest, split_words
from openheim.testing.fake_wire import NewId, WireFormat

DEFAULT_USAGE: Mapping[str, int] = {
    "promptTokenCount": 10,
    "candidatesTokenCount": 5,
    "totalTokenCount": 15,
}
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def stream_events(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> list[str]:
    """Every ``data:`` payload of the streamed reply, in order."""
    if reply.raw_events is not None:
        return [e if isinstance(e, str) else json.dumps(e) for e in reply.raw_events]
    parts = _parts(split_words(reply.reasoning), reply.text_pieces, reply, new_id)
    frames = [_response(request, [part]) for part in parts]
    if reply.error_event is not None:
        return [*map(json.dumps, frames), json.dumps({"error": _error(reply.error_event, 500)})]
    if not frames:
        frames.append(_response(request, []))
    _finish(frames[-1], reply)
    return [json.dumps(frame) for frame in frames]


def completion(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> dict[str, Any]:
    """The body of a non-streamed answer: every part in one response, or an ``{"error"}``."""
    if reply.error_event is not None:
        return {"error": _error(reply.error_event, 500)}
    thoughts = [reply.reasoning] if reply.reasoning else []
    texts = [reply.full_text] if reply.full_text else []
    response = _response(request, _parts(thoughts, texts, reply, new_id))
    _finish(response, reply)
    return response


def error_body(reply: FakeReply) -> dict[str, Any]:
    """The body of an error status: ``error_body`` as given, or Google's error shape."""
    if isinstance(reply.error_body, Mapping):
        return dict(reply.error_body)
    return {"error": _error(reply.error_body, reply.status)}


def _parts(
    thoughts: list[str], texts: list[str], reply: FakeReply, new_id: NewId
) -> list[dict[str, Any]]:
    thought_parts: list[dict[str, Any]] = [{"text": p, "thought": True} for p in thoughts]
    text_parts: list[dict[str, Any]] = [{"text": piece} for piece in texts]
    call_parts: list[dict[str, Any]] = [
        {"functionCall": _function_call(call, new_id)} for call in reply.tool_calls
    ]
    if reply.thinking_signature is not None:
        if not (thought_parts or call_parts or text_parts):
            thought_parts.append({"text": "", "thought": True})
        carrier = (thought_parts[-1:] or call_parts[:1] or text_parts[-1:])[0]
        carrier["thoughtSignature"] = reply.thinking_signature
    return [*thought_parts, *text_parts, *call_parts]


def _function_call(call: FakeToolCall, new_id: NewId) -> dict[str, Any]:
    """``{name, args, id}``; ``id=""`` leaves the id out, a raw string is sent parsed if it
    parses (possibly not an object) and as a string otherwise."""
    args: Any = call.arguments
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    else:
        args = dict(args)
    out: dict[str, Any] = {"name": call.name, "args": args}
    call_id = new_id() if call.id is None else call.id
    if call_id:
        out["id"] = call_id
    return out


def _response(request: RecordedRequest, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
        "modelVersion": _model(request),
        "responseId": "fake-response",
    }


def _finish(response: dict[str, Any], reply: FakeReply) -> None:
    response["candidates"][0]["finishReason"] = reply.finish_reason or "STOP"
    response["usageMetadata"] = dict(reply.usage if reply.usage is not None else DEFAULT_USAGE)


def _model(request: RecordedRequest) -> str:
    """The model named in the path (``.../models/{model}:method``)."""
    tail = request.path.rpartition("/models/")[2]
    return tail.partition(":")[0] or "fake-model"


def _error(error: Mapping[str, Any] | str | None, code: int) -> dict[str, Any]:
    if isinstance(error, Mapping):
        return dict(error)
    message = error or f"fake server error (HTTP {code})"
    return {"code": code, "message": message, "status": _STATUS_NAMES.get(code, "UNKNOWN")}


def _frames(reply: FakeReply, request: RecordedRequest, new_id: NewId) -> list[str]:
    return [f"data: {payload}" for payload in stream_events(reply, request, new_id)]


GEMINI = WireFormat(
    name="gemini",
    matches=lambda r: (
        r.method == "POST" and (":streamGenerateContent" in r.path or ":generateContent" in r.path)
    ),
    wants_stream=lambda r: ":streamGenerateContent" in r.path,
    stream_frames=_frames,
    completion=completion,
    error_body=error_body,
)
"""Gemini: ``POST .../models/{model}:streamGenerateContent`` (SSE) or ``:generateContent``."""
