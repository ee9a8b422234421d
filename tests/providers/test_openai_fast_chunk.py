"""The quick ways through a stream event give exactly what the full reading does: a text-only
OpenAI chunk the same deltas, final message and refusals for any shape; an event's JSON the
same value or refusal as ``json.loads``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openheim.errors import ProviderError, ProviderProtocolError
from openheim.events import TextDelta
from openheim.providers.base import ProviderSettings
from openheim.providers.openai_chat import OpenAIChatProvider, _Accumulator

SETTINGS = ProviderSettings(
    name="p", kind="openai_compatible", api_base="http://127.0.0.1:9/v1", model="m"
)
PROVIDER = OpenAIChatProvider(SETTINGS)  # decode only: its client never opens a connection

ODD = st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.floats(0, 1), st.text(max_size=3))
VALUE = st.one_of(ODD, st.lists(ODD, max_size=2), st.dictionaries(st.text(max_size=3), ODD))
DELTA = st.one_of(
    st.fixed_dictionaries({"content": st.one_of(st.text(max_size=5), VALUE)}),
    st.fixed_dictionaries(
        {"content": st.text(max_size=5)},
        optional={"role": VALUE, "reasoning": VALUE, "tool_calls": VALUE},
    ),
    VALUE,
)
CHOICE = st.one_of(
    st.fixed_dictionaries(
        {"delta": DELTA}, optional={"index": st.one_of(st.just(0), VALUE), "finish_reason": VALUE}
    ),
    VALUE,
)
CHUNK = st.one_of(
    st.fixed_dictionaries(
        {"choices": st.one_of(st.lists(CHOICE, min_size=1, max_size=2), VALUE)},
        optional={"model": VALUE, "usage": VALUE, "error": VALUE, "id": VALUE},
    ),
    VALUE,
)


def accumulator() -> _Accumulator:
    return _Accumulator("m", lambda: "call_1", "p")


def outcome(feed: Any, chunks: list[Any]) -> tuple[Any, ...]:
    try:
        items = [item for chunk in chunks for item in feed(chunk)]
    except ProviderError as error:
        return ("refused", str(error))
    return ("read", items)


@settings(max_examples=500, deadline=None)
@given(chunks=st.lists(CHUNK, min_size=1, max_size=4))
def test_the_quick_way_and_the_full_reading_agree_on_any_chunk(chunks: list[Any]) -> None:
    quick, full = accumulator(), accumulator()
    assert outcome(quick.feed, chunks) == outcome(full.absorb, chunks)
    assert quick.response() == full.response()


def test_a_text_chunk_gives_its_delta_and_the_model_named() -> None:
    state = accumulator()
    chunk = {"model": "gpt-x", "choices": [{"index": 0, "delta": {"content": "hi"}}]}
    assert state.feed(chunk) == [TextDelta("hi")]
    assert state.model == "gpt-x"
    assert state.feed({"choices": [{"delta": {"content": ""}, "finish_reason": None}]}) == []


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"delta": {"content": 5}}]},
        {"choices": [{"delta": {"content": ["x"]}}]},
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [["not", "an", "object"]]},
        {"choices": "none"},
    ],
)
def test_wrong_types_in_a_text_chunk_are_ignored(chunk: dict[str, Any]) -> None:
    assert accumulator().feed(chunk) == []


@pytest.mark.parametrize(
    "chunk", [{"error": {"message": "boom"}, "choices": [{"delta": {"content": "x"}}]}, ["x"]]
)
def test_an_error_or_a_chunk_that_is_not_an_object_is_refused(chunk: Any) -> None:
    with pytest.raises(ProviderError):
        accumulator().feed(chunk)


JSONISH = st.one_of(
    st.text(alphabet=' \t\n\r{}[]":,0123456789.eE+-truefalsnu\\\ufeff', max_size=12),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=8,
    ).map(json.dumps),
)


@settings(max_examples=500, deadline=None)
@given(body=JSONISH, before=st.sampled_from(["", " ", "\n"]), after=st.sampled_from(["", " ", "x"]))
def test_an_event_decodes_as_json_loads_decodes_it(body: str, before: str, after: str) -> None:
    data = before + body + after
    try:
        expected: Any = ("value", json.loads(data))
    except ValueError:
        expected = ("refused",)
    try:
        got: Any = ("value", PROVIDER.decode(data, "http://127.0.0.1:9/v1/chat/completions"))
    except ProviderProtocolError as error:
        assert "sent a stream event that is not JSON" in str(error)
        got = ("refused",)
    assert repr(got) == repr(expected)  # repr: NaN equals NaN
