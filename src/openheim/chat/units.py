"""Counts as people read them in a status line: ``8.4k`` tokens."""

from __future__ import annotations


def tokens(count: int) -> str:
    """``8.4k``-style token counts."""
    if count < 1000:
        return str(count)
    return f"{count / 1000:.1f}".removesuffix(".0") + "k"
