"""Checks of ACP request parameters the SDK leaves loose: a session's ``cwd``, a
``session/list`` cursor, and openheim's own ``_meta`` keys; each bad value is invalid params
with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import RequestError


def absolute_cwd(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError.invalid_params({"reason": f"cwd must be an absolute path, got {cwd!r}"})
    return path


def page_cursor(cursor: str | None) -> float | None:
    if cursor is None:
        return None
    try:
        return float(cursor)
    except ValueError:
        raise RequestError.invalid_params(
            {"reason": f"unknown cursor {cursor!r}; pass the nextCursor of a session/list reply"}
        ) from None


def meta_text(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None or isinstance(value, str):
        return value
    raise RequestError.invalid_params({"reason": f"_meta.{key} must be a string"})


def meta_list(meta: dict[str, Any], key: str) -> list[str]:
    value = meta.get(key) or []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise RequestError.invalid_params({"reason": f"_meta.{key} must be a list of strings"})
