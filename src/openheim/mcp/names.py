"""Tool names the model may see: ``{server}__{tool}``, in ``[A-Za-z0-9_-]``, at most 64 characters.

Providers reject other names, and servers are untrusted, so every name is sanitised: other
characters become ``_``, a leading digit gets a ``_`` prefix, a name over 64 characters is cut
and ends with a stable hash of the full name, and a collision gets a numbered suffix in the
order the tools were listed (deterministic for a given listing).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_NAME = 64
SEPARATOR = "__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LEN = 8


def sanitise(raw: str) -> str:
    """``raw`` with characters outside ``[A-Za-z0-9_-]`` replaced and a leading digit prefixed."""
    name = _BAD.sub("_", raw) or "_"
    return f"_{name}" if name[0].isdigit() else name


def shorten(name: str, limit: int = MAX_NAME) -> str:
    """``name`` cut to ``limit`` characters, ending in a hash of the whole name when cut."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LEN]
    return f"{name[: limit - _HASH_LEN - 1]}_{digest}"


def tool_name(server: str, tool: str) -> str:
    """The exposed name of ``tool`` on ``server``, before collisions are resolved."""
    return shorten(sanitise(f"{server}{SEPARATOR}{tool}"))


def unique_names(names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """``names`` with duplicates (among them and in ``taken``) suffixed ``_2``, ``_3``..."""
    used = set(taken)
    out: list[str] = []
    for name in names:
        candidate, n = name, 1
        while candidate in used:
            n += 1
            candidate = shorten_with_suffix(name, f"_{n}")
        used.add(candidate)
        out.append(candidate)
    return out


def shorten_with_suffix(name: str, suffix: str) -> str:
    """``name`` + ``suffix``, keeping the result within ``MAX_NAME`` characters."""
    return name[: MAX_NAME - len(suffix)] + suffix
