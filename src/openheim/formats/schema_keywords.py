"""The JSON-schema keywords whose stock checks cost too much on hostile input, done in
bounded time, and a wall-time bound on every keyword.

``jsonschema`` matches ``pattern``, ``patternProperties`` (and the properties that
``additionalProperties`` leaves over) with Python's backtracking ``re``: ``^(a+)+$`` against
34 ``a`` and a ``!`` holds the interpreter for minutes. Here they match with RE2
(``openheim.formats.regex``), linear in the text. ``uniqueItems`` compares every pair of items,
20,000
objects took half a minute; here each item gets a hashable canonical key, so it is linear too.
Every keyword, stock or not, first checks the deadline ``timed_classes`` was given, so a schema
whose ``anyOf`` branches multiply the work stops with ``TooSlow`` instead of running on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

from jsonschema import validators  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

from openheim.formats.regex import LinearRegex, PatternError, compile_linear, utf8

Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[ValidationError] | None]

DEADLINE: ContextVar[float] = ContextVar("schema_deadline", default=float("inf"))
"""The ``time.monotonic()`` by which the running check must be over."""


class TooSlow(Exception):
    """The check ran past its deadline."""


class BadPattern(Exception):
    """A ``pattern`` or ``patternProperties`` regex RE2 cannot compile."""

    def __init__(self, error: PatternError) -> None:
        super().__init__(f"the pattern {error.pattern!r} cannot be used: {error.reason}")


@lru_cache(maxsize=256)
def regex(pattern: str) -> LinearRegex:
    """``pattern`` compiled with RE2 (``BadPattern`` when it cannot be)."""
    try:
        return compile_linear(pattern)
    except PatternError as err:
        raise BadPattern(err) from None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (JSON Schema's unanchored match)."""
    data = utf8(text)
    return regex(pattern).find(data, 0, len(data)) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, extra: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in declared and not any(search(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif extra is False and extras:
        names = ", ".join(repr(key) for key in extras)
        yield ValidationError(f"Additional properties are not allowed ({names} unexpected)")


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    first: dict[Any, int] = {}
    for index, item in enumerate(instance):
        seen = first.setdefault(canonical(item), index)
        if seen != index:
            yield ValidationError(f"items {seen} and {index} are equal; the items must differ")
            return


def canonical(value: Any) -> Any:
    """A hashable key equal for JSON values JSON Schema calls equal: ``1`` and ``1.0`` alike,
    ``true`` and ``1`` not, objects whatever their key order."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, canonical(item)) for key, item in value.items()))
    return (type(value).__name__, value)


_BOUNDED: dict[str, Keyword] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


def _timed(keyword: Keyword) -> Keyword:
    def timed(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        if time.monotonic() > DEADLINE.get():
            raise TooSlow
        return keyword(validator, value, instance, schema)

    return timed


@cache
def timed_class(base: Any) -> Any:
    """``base`` (a jsonschema validator class) with the bounded keywords, each keyword
    checking the deadline first."""
    keywords = {
        name: _timed(_BOUNDED.get(name, keyword)) for name, keyword in base.VALIDATORS.items()
    }
    return validators.extend(base, keywords)
