"""The event-stream parser on its own: WHATWG rules, and the same events however bytes split."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openheim.providers import sse
from openheim.providers.sse import Event, EventParser, EventStreamError

STREAM = (
    "\ufeff: a comment\n"
    "event: message_start\n"
    'data: {"a": "héllo ✓ 🙂"}\n'
    "\n"
    "data:first\n"
    "data:  two spaces\n"
    "data\n"
    "id: 7\n"
    "retry: 100\n"
    "unknown: field\n"
    "\n"
    "event: lonely\n"
    "\n"
    'data: {"b": 2}\n'
    "\n"
    "data: never dispatched\n"
).encode()
EXPECTED = [
    Event("message_start", '{"a": "héllo ✓ 🙂"}', ""),
    Event("message", "first\n two spaces\n", "7"),
    Event("message", '{"b": 2}', "7"),
]


def parse(chunks: list[bytes]) -> list[Event]:
    parser = EventParser()
    return [event for chunk in chunks for event in parser.feed(chunk)]


def reference(data: bytes) -> list[Event]:
    """The WHATWG algorithm written plainly, over the whole stream at once: the oracle."""
    text = data.decode().removeprefix("\ufeff")
    events: list[Event] = []
    lines: list[str] = []
    kind = last_id = ""
    for line in re.split("\r\n|\r|\n", text)[:-1]:
        if line == "":
            if lines:
                events.append(Event(kind or "message", "\n".join(lines), last_id))
            kind, lines = "", []
            continue
        if line.startswith(":"):
            continue
        name, value = line.split(":", 1) if ":" in line else (line, "")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            lines.append(value)
        elif name == "event":
            kind = value
        elif name == "id" and "\0" not in value:
            last_id = value
    return events


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_a_whole_stream_follows_the_event_stream_rules() -> None:
    assert parse([STREAM]) == EXPECTED == reference(STREAM)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_gives_the_same_events(end: bytes) -> None:
    assert parse([STREAM.replace(b"\n", end)]) == EXPECTED


def test_every_split_into_two_or_into_single_bytes_gives_the_same_events() -> None:
    for data in (STREAM, STREAM.replace(b"\n", b"\r\n"), STREAM.replace(b"\n", b"\r")):
        for cut in range(len(data) + 1):
            assert parse(split_at(data, [cut])) == EXPECTED, (data, cut)
        assert parse([data[i : i + 1] for i in range(len(data))]) == EXPECTED


def test_seeded_random_splits_give_the_same_events() -> None:
    rng = random.Random(20261126)
    for _ in range(300):
        data = STREAM.replace(b"\n", rng.choice([b"\n", b"\r\n", b"\r"]))
        cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(1, 12))]
        assert parse(split_at(data, cuts)) == EXPECTED, (data, cuts)


_FIELD_VALUE = st.text(
    alphabet=st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=12
)
_LINE = st.one_of(
    st.builds(lambda v: "data:" + v, _FIELD_VALUE),
    st.builds(lambda v: "data: " + v, _FIELD_VALUE),
    st.builds(lambda v: "event: " + v, _FIELD_VALUE),
    st.builds(lambda v: "id: " + v, _FIELD_VALUE),
    st.builds(lambda v: ":" + v, _FIELD_VALUE),
    st.just(""),
    st.just("data"),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(_LINE, max_size=20),
    ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=3),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_any_stream_split_anywhere_with_any_line_ends_gives_the_same_events(
    lines: list[str], ends: list[str], cuts: list[int]
) -> None:
    data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines)).encode()
    assert parse(split_at(data, [c for c in cuts if c <= len(data)])) == reference(data)


def test_a_bom_is_skipped_only_at_the_start() -> None:
    bom = b"\xef\xbb\xbf"
    assert parse([bom[:1], bom[1:2], bom[2:] + b"data: x\n\n"]) == [Event("message", "x", "")]
    # a second BOM is part of the first line's field name, so that line is ignored
    assert parse([bom + bom + b"data: x\n\ndata: y\n\n"]) == [Event("message", "y", "")]


def test_an_id_holding_nul_is_ignored_and_the_last_id_is_kept() -> None:
    data = b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"
    assert parse([data]) == [Event("message", "a", "1"), Event("message", "b", "1")]


def test_a_character_split_across_chunks_is_decoded_whole() -> None:
    data = "data: 🙂é\n\n".encode()
    for cut in range(len(data) + 1):
        assert parse(split_at(data, [cut])) == [Event("message", "🙂é", "")]


@pytest.mark.parametrize(
    "data",
    [b"data: \xff\n\n", b"data: \xe2\x82\n\n", b"data: \xed\xa0\x80\n\n", b"data: \xc0\xaf\n\n"],
)
def test_bytes_that_are_not_utf8_are_an_event_stream_error(data: bytes) -> None:
    with pytest.raises(EventStreamError, match="not valid UTF-8"):
        parse([data])


def test_an_oversized_line_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT", 64)
    parser = EventParser()
    assert parser.feed(b"data: " + b"x" * 50) == []
    with pytest.raises(EventStreamError, match="a line of the event stream exceeds 64 bytes"):
        parser.feed(b"x" * 20)


def test_an_oversized_line_within_one_chunk_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT", 64)
    with pytest.raises(EventStreamError, match="a line of the event stream exceeds 64 bytes"):
        EventParser().feed(b"event: " + b"x" * 70 + b"\r\ndata: y\n\n")


def test_an_oversized_event_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT", 64)
    parser = EventParser()
    assert parser.feed(b"data: " + b"x" * 40 + b"\n") == []
    with pytest.raises(EventStreamError, match="an event of the event stream exceeds 64 bytes"):
        parser.feed(b"data: " + b"x" * 40 + b"\n")


def test_an_empty_chunk_changes_nothing() -> None:
    assert parse([b"data: a\r", b"", b"\n\r", b"", b"\n"]) == [Event("message", "a", "")]


def test_one_whole_event_per_chunk_keeps_the_state_of_the_chunks_before() -> None:
    chunks = [b"data: x\n\n", b"event: e\n", b"data:y\n\n", b"id: 3\n\n", b"data:  z\n\n"]
    assert parse(chunks) == [
        Event("message", "x", ""),
        Event("e", "y", ""),
        Event("message", " z", "3"),
    ]
    assert parse([b"data: a\n", b"data: b\n\n"]) == [Event("message", "a\nb", "")]
    # a CR that ended the last chunk may pair with the next one's LF: not a whole event
    assert parse([b"data: a\r", b"\ndata: b\n\n"]) == [Event("message", "a\nb", "")]


def test_a_whole_event_chunk_that_is_not_utf8_is_an_error() -> None:
    parser = EventParser()
    assert parser.feed(b"data: a\n\n") == [Event("message", "a", "")]
    with pytest.raises(EventStreamError, match="not valid UTF-8"):
        parser.feed(b"data: \xff\n\n")


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(st.lists(_LINE, min_size=1, max_size=3), max_size=10),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_stream_sent_one_event_per_chunk_gives_the_same_events(
    events: list[list[str]], end: str
) -> None:
    chunks = ["".join(line + end for line in lines) + end for lines in events]
    data = "".join(chunks).encode()
    assert parse([chunk.encode() for chunk in chunks]) == reference(data)
