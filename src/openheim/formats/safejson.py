"""Decoding JSON from outside with its nesting bounded before the decoder sees it.

Python's decoder recurses once per nested array or object, so a value nested a few thousand
deep (``[[[[...``) is a ``RecursionError`` that escapes every ``except ValueError``: it drops a
connection or ends a process instead of being answered as bad input. Every surface that decodes
JSON a client, platform, provider or model sent goes through ``loads`` here, which measures the
nesting first, in linear time and without recursion, and refuses a value deeper than
``MAX_DEPTH`` with ``TooDeep``, a ``ValueError`` whose message says so on one line; callers
that already answer undecodable input (``except ValueError``) answer it the same way.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 128
"""The deepest nesting of arrays and objects accepted: far beyond any message the protocols
carry, and shallow enough for every recursive step after decoding (validation, redaction,
encoding again) to stay well inside Python's recursion limit."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A JSON string, or an unterminated one up to the end: brackets inside strings do not nest.
Every attempt that starts at a quote succeeds, so the scan never goes back over the text."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""Opening brackets as the signed byte 1, closing ones as -1."""


class TooDeep(ValueError):
    """The JSON nests arrays and objects deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the JSON is nested more than {limit} levels deep")
        self.limit = limit


def check_depth(data: str | bytes | bytearray, limit: int = MAX_DEPTH) -> None:
    """Raise ``TooDeep`` when ``data`` nests arrays and objects more than ``limit`` deep.

    Text that is not JSON at all passes (the decoder then says what is wrong with it). A text
    with no more than ``limit`` opening brackets cannot be too deep and is not scanned further.
    """
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = bytes(data)
        if raw.count(b"[") + raw.count(b"{") <= limit:
            return
    steps = _STRING.sub(b"", raw).translate(_STEPS, _NOT_BRACKETS)
    if max(accumulate(memoryview(steps).cast("b")), default=0) > limit:
        raise TooDeep(limit)


def loads(data: str | bytes | bytearray, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` of ``data`` after ``check_depth``; ``ValueError`` (``TooDeep``, or the
    decoder's own ``JSONDecodeError``) for anything that is not acceptable JSON."""
    check_depth(data, limit)
    return json.loads(data)
