"""``EventRedactor``: deltas come out as ``event_to_dict`` would write them, a secret split over
deltas comes out redacted, and what a stream held back comes before the next other event."""

from __future__ import annotations

from openheim.events import Finished, TextDelta, ThinkingDelta, event_to_dict
from openheim.redaction.secrets import REDACTED
from openheim.server.redacting import EventRedactor

KEY = "sk-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def test_deltas_are_written_as_event_to_dict_writes_them() -> None:
    redactor = EventRedactor()
    for delta in (TextDelta("plain words "), ThinkingDelta("a thought ")):
        assert redactor(delta) == [event_to_dict(delta)]


def test_a_secret_split_over_deltas_is_redacted_and_flushed_before_finished() -> None:
    redactor = EventRedactor()
    shown: list[dict[str, object]] = []
    for piece in ("the key is ", KEY[:10], KEY[10:], " ok"):
        shown += redactor(TextDelta(piece))
    shown += redactor(Finished("end_turn"))
    text = "".join(str(d["text"]) for d in shown if d["type"] == "text_delta")
    assert KEY not in text and REDACTED in text and text.endswith(" ok")
    assert shown[-1]["type"] == "finished"
    assert all(d["type"] == "text_delta" for d in shown[:-1])
