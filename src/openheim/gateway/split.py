"""Splits a long reply into messages within a platform's limit: at a paragraph, else a line,
else a space, never inside a word unless the word alone is over the limit; a fenced code block
cut in two is closed at the end of one message and opened again (same fence line, or the bare
mark when that line is long) in the next. Linear in the text's length: chunks are cut by index.
"""

from __future__ import annotations

import re

_FENCE_LINE = re.compile(r"^(```|~~~)[^\n]*$", re.MULTILINE)
_LONGEST_OPENER = 20
"""A fence line longer than this is reopened as its bare mark (it could fill a whole chunk)."""


def split_text(text: str, limit: int) -> list[str]:
    """``text`` as chunks of at most ``limit`` characters (``limit`` must exceed 40)."""
    chunks: list[str] = []
    opener: str | None = None  # the fence line of a block left open by the previous chunk
    at = 0
    while at < len(text):
        head = f"{opener}\n" if opener else ""
        room = limit - len(head)
        if len(text) - at <= room:
            chunks.append(head + text[at:])
            break
        cut = _cut(text, at, room - 4)  # room for a closing "\n```"
        piece = head + text[at:cut].rstrip()
        opener = _open_fence(piece)
        if opener is not None:
            piece += "\n" + opener[:3]
            opener = opener if len(opener) <= _LONGEST_OPENER else opener[:3]
        chunks.append(piece)
        at = _skip(text, cut, "\n" if opener else " \n")
    return chunks


def _skip(text: str, at: int, chars: str) -> int:
    """The first index from ``at`` whose character is not in ``chars``."""
    while at < len(text) and text[at] in chars:
        at += 1
    return at


def _open_fence(text: str) -> str | None:
    """The fence line of a code block ``text`` leaves open, or None."""
    opener: str | None = None
    for match in _FENCE_LINE.finditer(text):
        line = match.group(0)
        if opener is None:
            opener = line
        elif line.strip() == opener[:3]:
            opener = None
    return opener


def _cut(text: str, start: int, room: int) -> int:
    """Where to end a chunk of at most ``room`` characters of ``text`` from ``start``."""
    end = start + room + 1
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, start, end)
        if at - start > room // 4:
            return at
    return start + room
