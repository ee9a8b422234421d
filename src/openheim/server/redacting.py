"""Events as the server sends them: every secret redacted, as on every other surface.

Text and thinking deltas pass through a ``StreamRedactor`` each, so a secret the model streams
in pieces reaches the client redacted; what a stream holds back is sent (redacted) before any
other event. Every string of every other event is redacted whole.
"""

from __future__ import annotations

from typing import Any

from openheim.events import Event, TextDelta, ThinkingDelta, event_to_dict
from openheim.redaction.secrets import redact_data
from openheim.redaction.stream import StreamRedactor

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
            out.append(redacted)
        return out
