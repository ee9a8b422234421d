"""The text a summary is written from: every message told in plain words, long parts cut, and
chunks that never pass their limit."""

from __future__ import annotations

from openheim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.runtime.summary import PART_MAX, chunks, transcript


def test_the_transcript_tells_calls_and_results() -> None:
    call = ToolUseBlock("c1", "read_file", {"path": "a.txt"})
    messages = [
        Message.user("read a.txt"),
        Message("assistant", (TextBlock("reading"), call)),
        Message("user", (ToolResultBlock("c1", "x" * (PART_MAX + 10), is_error=True),)),
        Message("assistant", ()),
    ]
    told = transcript(messages)
    assert told[:2] == [
        "User: read a.txt",
        'Assistant: reading\nTool call read_file: {"path": "a.txt"}',
    ]
    assert told[2].startswith("Tool result (error): xxx") and told[2].endswith("[... 10 more]")
    assert len(told) == 3  # the empty message is left out


def test_chunks_stay_within_their_limit() -> None:
    pieces = ["a" * 40, "b" * 40, "c" * 500, "d" * 10]
    out = chunks(pieces, 100)
    assert all(len(chunk) <= 100 for chunk in out)
    assert out[0] == "a" * 40 + "\n\n" + "b" * 40
    assert out[1:] == ["c" * 68 + " [... 432 more]\n\n" + "d" * 10]
