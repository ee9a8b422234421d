"""WebSocket frames: ``{"channel": ..., "data": {...}}`` in both directions, and their checks.

A frame that is not JSON, not an object, names no known channel or lacks a field is a
``BadRequest``: the connection answers it with an ``error`` on the ``system`` channel (or on
the frame's own channel when that one is known) and stays open.
"""

from __future__ import annotations

from typing import Any

from openheim.formats import safejson

CHANNELS = ("agent", "fs", "system")


class BadRequest(Exception):
    """A frame or request the server refuses: what is wrong, and how to fix it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def parse_frame(text: str) -> tuple[str, dict[str, Any]]:
    """The channel and data of one text frame."""
    try:
        frame = safejson.loads(text)
    except ValueError as err:
        raise BadRequest(
            f"the frame is not JSON: {err}", 'send {"channel": ..., "data": {...}}'
        ) from None
    if not isinstance(frame, dict):
        raise BadRequest("the frame is not a JSON object", 'send {"channel": ..., "data": {...}}')
    channel = frame.get("channel")
    if channel not in CHANNELS:
        raise BadRequest(f"unknown channel {channel!r}", f"use one of {', '.join(CHANNELS)}")
    data = frame.get("data")
    if not isinstance(data, dict):
        raise BadRequest("the frame's data is not an object", "send data as a JSON object")
    return channel, data


def req_str(data: dict[str, Any], key: str) -> str:
    """A required string field."""
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} must be a non-empty string", f"send {key} as a string")
    return value


def opt_str(data: dict[str, Any], key: str) -> str | None:
    """An optional string field (None when absent or null)."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} must be a non-empty string", f"send {key} as a string or omit it")
    return value


def str_list(data: dict[str, Any], key: str) -> list[str]:
    """An optional list of strings (empty when absent)."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{key} must be a list of strings", f"send {key} as a list of strings")
    return value


def reply_id(data: dict[str, Any]) -> str | int | None:
    """The request's ``id`` to echo (a string or an integer; anything else is not echoed)."""
    value = data.get("id")
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None
