"""Counts as people read them in a status line: ``8.4k`` tokens."""

from __future__ import annotations


def tokens(count: int) -> str:
    """``8.4k``-style token counts."""
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)
