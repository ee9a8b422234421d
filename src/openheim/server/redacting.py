"""Events as the server sends them: every secret redacted, as on every other surface.

Text and thinking deltas pass through a ``StreamRedactor`` each, so a secret the model streams
in pieces reaches the client redacted; what a stream holds back is sent (redacted) before any
other event. Every string of every other event is redacted whole; a file diff also comes as a
unified diff with context (``with_unified``).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from openheim.events import Event, TextDelta, ThinkingDelta, event_to_dict
from openheim.redaction.secrets import redact_data
from openheim.redaction.stream import StreamRedactor
from openheim.runtime import approvals

_NAMES = {TextDelta: "text_delta", ThinkingDelta: "thinking_delta"}
"""The ``type`` of each delta's dict, as ``event_to_dict`` writes it."""


class EventRedactor:
    """Turns the events of one prompt into redacted event dicts (none, one or several)."""

    def __init__(self) -> None:
        self.streams: dict[type[TextDelta] | type[ThinkingDelta], StreamRedactor] = {
            TextDelta: StreamRedactor(),
            ThinkingDelta: StreamRedactor(),
        }

    def __call__(self, event: Event) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, stream in self.streams.items():
            if not isinstance(event, kind) and not stream.idle and (held := stream.flush()):
                out.append({"type": _NAMES[kind], "text": held})
        if isinstance(event, TextDelta | ThinkingDelta):
            text = self.streams[type(event)].feed(event.text)
            if text:
                out.append({"type": event.type, "text": text})
        else:
            redacted: dict[str, Any] = redact_data(event_to_dict(event))
            out.append(with_unified(redacted))
        return out


def with_unified(event: dict[str, Any]) -> dict[str, Any]:
    """A tool result with a file diff gets the diff's ``unified`` text too (from the redacted
    texts, none when either is over ``MAX_BEFORE``), so a client shows hunks with context
    rather than compare the texts itself."""
    diff = event.get("diff")
    if not isinstance(diff, dict):
        return event
    old, new = diff.get("old_text") or "", diff.get("new_text") or ""
    if len(old) > approvals.MAX_BEFORE or len(new) > approvals.MAX_BEFORE:
        return {**event, "diff": {**diff, "unified": None}}
    name = PurePath(diff.get("path") or "").name
    return {**event, "diff": {**diff, "unified": approvals.unified(old, new, name)}}
