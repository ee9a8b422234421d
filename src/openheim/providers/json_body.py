"""Request bodies as JSON bytes, with the part that repeats encoded once.

A model call sends the tools' schemas with every request, and they are most of its body (a few
kilobytes for the built-in tools, against a few hundred bytes of a short conversation). They are
the same on every call of a session, and of every session offered the same tools, so each wire
format keeps its tool list as JSON text (``ToolsJSON``) and the body is the rest, encoded per
call, with that text spliced in (``encode``): the bytes a plain ``json.dumps`` of the whole body
would give, but the schemas are walked once instead of on every call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from openheim.formats.regex import utf8
from openheim.providers.base import ToolSpec

CACHE_SIZE = 256
"""Tool lists kept encoded per wire format (a server's sessions share a handful)."""


@dataclass(frozen=True, slots=True)
class RawJSON:
    """JSON text already encoded: a body member that ``encode`` splices in as it is.

    Not a ``str``, so that a plain ``json.dumps`` of a body holding one fails loudly instead of
    sending the text as a quoted string."""

    text: str


def dumps(value: Any) -> str:
    """Compact JSON, as httpx encodes a ``json=`` body (UTF-8 kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(body: Mapping[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON; its ``RawJSON`` members go in as their text, after the others.
    A lone surrogate (in a history stored before prompts were cleaned of them, or in a model's
    own answer) is sent as U+FFFD: UTF-8 cannot carry it, and the session must go on."""
    raw = [(key, value) for key, value in body.items() if isinstance(value, RawJSON)]
    if not raw:
        return utf8(dumps(body))
    plain = dumps({key: value for key, value in body.items() if not isinstance(value, RawJSON)})
    members = [f"{dumps(key)}:{value.text}" for key, value in raw]
    if plain != "{}":
        members.insert(0, plain[1:-1])
    return utf8("{" + ",".join(members) + "}")


class ToolsJSON:
    """A wire format's tool list (``convert`` of the specs) as ``RawJSON``, made once per list.

    A list is known by each tool's name, description and schema object: tools keep their
    schema for their life and only read it (``Tool.parameters``), so the same objects give the
    same JSON. The schemas of the lists kept are held here, so an ``id`` in a key is never
    reused by another object while it is cached."""

    def __init__(self, convert: Callable[[tuple[ToolSpec, ...]], Any]) -> None:
        self._convert = convert
        self._cache: dict[tuple[tuple[str, str, int], ...], tuple[RawJSON, object]] = {}

    def __call__(self, specs: tuple[ToolSpec, ...]) -> RawJSON:
        key = tuple((spec.name, spec.description, id(spec.parameters)) for spec in specs)
        found = self._cache.get(key)
        if found is not None:
            return found[0]
        if len(self._cache) >= CACHE_SIZE:
            self._cache.clear()
        encoded = RawJSON(dumps(self._convert(specs)))
        self._cache[key] = (encoded, [spec.parameters for spec in specs])
        return encoded
