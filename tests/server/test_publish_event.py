"""``Live.publish_event``: a delta's frame written out directly is byte for byte the general
encoder's, and every other event dict takes the general path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openheim.server.live import Live

TEXTS = [
    "",
    "plain",
    'quote " backslash \\ slash /',
    "new\nline\ttab\r\x00\x1f\x7f",
    "unicode é ü 漢字 🙂",
    "lone surrogate \ud800 end",
    "</script><!--",
]


class Seen:
    def __init__(self) -> None:
        self.frames: list[str] = []

    def push(self, frame: str) -> None:
        self.frames.append(frame)

    def replay(self, frames: list[str]) -> None:
        self.frames.extend(frames)


def general(key: str, seq: int, event: dict[str, Any]) -> str:
    return json.dumps({"type": "event", "session_id": key, "seq": seq, "event": event})


@pytest.mark.parametrize("kind", ["text_delta", "thinking_delta"])
async def test_a_delta_frame_is_the_general_encoders_byte_for_byte(kind: str) -> None:
    live, seen = Live(), Seen()
    live.key = 'key-"é"'
    live.subscribers.add(seen)
    for text in TEXTS:
        live.publish_event({"type": kind, "text": text})
    expected = [general('key-"é"', n, {"type": kind, "text": t}) for n, t in enumerate(TEXTS, 1)]
    assert seen.frames == expected
    assert [text for _, text in live.log] == expected and live.seq == len(TEXTS)


async def test_a_changed_key_is_quoted_anew() -> None:
    live, seen = Live(), Seen()
    live.subscribers.add(seen)
    live.key = "first"
    live.publish_event({"type": "text_delta", "text": "a"})
    live.key = "second"
    live.publish_event({"type": "text_delta", "text": "b"})
    assert seen.frames == [
        general("first", 1, {"type": "text_delta", "text": "a"}),
        general("second", 2, {"type": "text_delta", "text": "b"}),
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"text": "keys the other way round", "type": "text_delta"},
        {"type": "text_delta", "text": "and one more key", "extra": 1},
        {"type": "text_delta", "text": 5},
        {"type": "text_delta", "text": None},
        {"type": "notice", "text": "not a delta"},
        {"type": "finished", "stop_reason": "end_turn"},
    ],
)
async def test_any_other_event_dict_takes_the_general_path(event: dict[str, Any]) -> None:
    live, seen = Live(), Seen()
    live.key = "k"
    live.subscribers.add(seen)
    live.publish_event(event)
    assert seen.frames == [general("k", 1, event)]
