"""``openheim.formats.safejson``: nesting is measured before decoding, in linear time, strings and
escapes respected; too deep is a one-line ``ValueError``, never a ``RecursionError``."""

from __future__ import annotations

import time

import pytest

from openheim.formats.safejson import MAX_DEPTH, TooDeep, check_depth, loads


def deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


@pytest.mark.parametrize(
    ("text", "too_deep"),
    [
        pytest.param(deep(MAX_DEPTH), False, id="at the limit"),
        pytest.param(deep(MAX_DEPTH + 1), True, id="one over"),
        pytest.param(deep(2000), True, id="2000 deep"),
        pytest.param(deep(100_000), True, id="100000 deep"),
        pytest.param('{"a":' * 2000 + "1" + "}" * 2000, True, id="objects 2000 deep"),
        pytest.param("[" * 100_000, True, id="unclosed"),
        pytest.param(b"[" * 5000 + b"]" * 5000, True, id="bytes"),
        pytest.param('["' + "[" * 5000 + '"]', False, id="brackets inside a string"),
        pytest.param('["\\"' + "[" * 5000 + '"]', False, id="after an escaped quote"),
        pytest.param('["\\\\"' + ",[" * 300 + "]" * 300 + "]", True, id="after an escaped \\"),
        pytest.param("[" * 300 + "]" * 300 + '"', True, id="unterminated string after"),
        pytest.param("[]" * 100_000, False, id="wide not deep"),
        pytest.param("not json [[[", False, id="not JSON is left to the decoder"),
    ],
)
def test_depth_is_measured_before_decoding(text: str | bytes, too_deep: bool) -> None:
    if too_deep:
        with pytest.raises(TooDeep) as caught:
            loads(text)
        assert str(caught.value) == f"the JSON is nested more than {MAX_DEPTH} levels deep"
        assert isinstance(caught.value, ValueError)
    else:
        check_depth(text)


def test_a_value_at_the_limit_decodes() -> None:
    assert loads(deep(MAX_DEPTH)) is not None
    assert loads('{"a": [1, {"b": "[[[["}]}') == {"a": [1, {"b": "[[[["}]}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('"\\"' * 200_000, id="escaped quotes never closed"),
        pytest.param('"' + "\\" * 400_001, id="backslashes never closed"),
        pytest.param("[" * 200 + '"' * 400_000, id="many empty strings"),
    ],
)
def test_the_scan_is_linear(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(ValueError):
        loads("[" * 200 + text)
    assert time.monotonic() - started < 2
