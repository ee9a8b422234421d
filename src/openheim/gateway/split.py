"""Splits a long reply into messages within a platform's limit: at a paragraph, else a line,
else a space, never inside a word unless the word alone is over the limit; a fenced code block
cut in two is closed at the end of one message and opened again (same fence line) in the next.
"""

from __future__ import annotations

import re

_FENCE_LINE = re.compile(r"^(```|~~~)[^\n]*$", re.MULTILINE)


def split_text(text: str, limit: int) -> list[str]:
    """``text`` as chunks of at most ``limit`` characters (``limit`` must exceed 40)."""
    chunks: list[str] = []
    opener: str | None = None  # the fence line of a block left open by the previous chunk
    rest = text
    while rest:
        head = f"{opener}\n" if opener else ""
        room = limit - len(head)
        if len(rest) <= room:
            chunks.append(head + rest)
            break
        cut = _cut(rest, room - 4)  # room for a closing "\n```"
        piece = head + rest[:cut].rstrip()
        opener = _open_fence(piece)
        if opener is not None:
            piece += "\n" + opener[:3]
        chunks.append(piece)
        rest = rest[cut:].lstrip("\n" if opener else " \n")
    return chunks


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


def _cut(text: str, room: int) -> int:
    """Where to end a chunk of at most ``room`` characters of ``text``."""
    window = text[: room + 1]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep, 0, room + 1)
        if at > room // 4:
            return at
    return room
