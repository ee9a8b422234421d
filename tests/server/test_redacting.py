"""``EventRedactor``: deltas come out as ``event_to_dict`` would write them, a secret split over
deltas comes out redacted, and what a stream held back comes before the next other event."""

from __future__ import annotations

from openheim.events import (
    FileDiff,
    Finished,
    TextDelta,
    ThinkingDelta,
    ToolResult,
    event_to_dict,
)
from openheim.redaction.secrets import REDACTED
from openheim.runtime.approvals import MAX_BEFORE
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


def test_a_file_diff_comes_with_a_unified_diff_with_context_from_the_redacted_texts() -> None:
    before = "".join(f"line {n}\n" for n in range(1, 11))
    after = before.replace("line 5\n", f"line five {KEY}\n")
    diff = FileDiff("/work/notes.txt", before, after)
    (shown,) = EventRedactor()(ToolResult("c1", "edit_file", "ok", False, "completed", diff))
    unified = shown["diff"]["unified"]
    assert unified.splitlines()[:3] == ["--- a/notes.txt", "+++ b/notes.txt", "@@ -2,7 +2,7 @@"]
    assert " line 2" in unified and " line 8" in unified  # three lines of context each side
    assert "-line 5" in unified and f"+line five {REDACTED}" in unified
    assert KEY not in str(shown)


def test_a_new_file_diffs_from_nothing_and_a_huge_one_has_no_unified_diff() -> None:
    new = EventRedactor()(
        ToolResult(
            "c1", "write_file", "ok", False, "completed", FileDiff("/w/a.txt", None, "one\ntwo\n")
        )
    )
    assert new[0]["diff"]["unified"].endswith("@@ -0,0 +1,2 @@\n+one\n+two\n")
    huge = "x\n" * (MAX_BEFORE // 2 + 1)
    big = EventRedactor()(
        ToolResult("c2", "write_file", "ok", False, "completed", FileDiff("/w/b.txt", None, huge))
    )
    assert big[0]["diff"]["unified"] is None and big[0]["diff"]["new_text"] == huge
