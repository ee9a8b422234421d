"""Finding action-envelope blocks in model text, chunk by chunk.

A block opens with a run of three or more backticks directly followed by one of ``TAGS`` (any
case) and a character that cannot continue the tag. It closes at the first line that starts,
after optional spaces or tabs, with three or more backticks, outside any JSON string: models
(and llama.cpp's JSON grammar) may put raw newlines in strings, and a file's content may well
hold a Markdown fence. If the text ends with no such line (an unbalanced quote, say), the first
fence line at all closes the block; failing that, the block runs to the end of the text.

``FenceSplitter`` cuts streamed text into plain text and blocks as chunks arrive, and decides
nothing it cannot be sure of yet: backticks at the end of a chunk, or a tag cut in half, are held
back until the following characters settle whether a block opens. Its output therefore does not
depend on how the text was chunked, so what streams to the user is exactly the text that the
final parse keeps outside the blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

from openheim.providers.base import ENVELOPE_FENCE

FENCE_TAG = ENVELOPE_FENCE
TAGS = (FENCE_TAG, "yips-agent", "yips-tools")
"""Our tag first, then Yips' tag and its legacy one."""

_LONGEST_TAG = max(len(t) for t in TAGS)
_RUN = re.compile(r"`{3,}")
_CLOSE = re.compile(r"\n[ \t]*`{3,}")
_FENCE_LINE = re.compile(r"[ \t]*`{3,}")
_FENCE_LINE_START = re.compile(r"[ \t]*`{0,2}")
_JSON_MARK = re.compile(r'["\\\n]')
_TAG_CHAR = re.compile(r"[\w-]")


@dataclass(frozen=True, slots=True)
class Text:
    """Text outside any block."""

    text: str


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its tag, its body and its exact source text (fences included)."""

    tag: str
    body: str
    raw: str
    closed: bool
    """False when the text ended before the closing fence."""


Segment: TypeAlias = Text | Block


def opening_tag(text: str, at: int, final: bool) -> str | None:
    """The tag that a backtick run ending at ``at`` opens: ``""`` when it opens no block,
    ``None`` when the text so far cannot tell (``final`` says no more text will come)."""
    rest = text[at : at + _LONGEST_TAG + 1].lower()
    for tag in TAGS:
        if rest.startswith(tag):
            if len(rest) == len(tag):
                return tag if final else None
            return "" if _TAG_CHAR.match(rest, len(tag)) else tag
    if not final and any(tag.startswith(rest) for tag in TAGS):
        return None
    return ""


class FenceSplitter:
    """Incremental splitter: ``feed`` chunks, then ``close`` once; both return new segments."""

    def __init__(self) -> None:
        self._buf = ""
        self._opening: str | None = None
        """The opening fence of the block being read, None outside blocks."""
        self._tag = ""
        self._scan = _BodyScan()

    def feed(self, chunk: str) -> list[Segment]:
        self._buf += chunk
        return self._drain(final=False)

    def close(self) -> list[Segment]:
        """Flush everything held back: the text has ended."""
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[Segment]:
        out: list[Segment] = []
        progressed = True
        while progressed:
            step = self._outside if self._opening is None else self._inside
            segments, progressed = step(final)
            out.extend(segments)
        return out

    def _take_text(self, end: int) -> list[Segment]:
        text, self._buf = self._buf[:end], self._buf[end:]
        return [Text(text)] if text else []

    def _outside(self, final: bool) -> tuple[list[Segment], bool]:
        """Emit text up to the next block opening (or to what must wait); open the block."""
        buf, pos = self._buf, 0
        while (run := _RUN.search(buf, pos)) is not None:
            tag = opening_tag(buf, run.end(), final)
            if tag is None:
                return self._take_text(run.start()), False
            if tag:
                out = self._take_text(run.start())
                self._opening = self._buf[: run.end() - run.start() + len(tag)]
                self._buf = self._buf[len(self._opening) :]
                self._tag, self._scan = tag, _BodyScan()
                return out, True
            pos = run.end()
        keep = len(buf) if final else len(buf.rstrip("`"))
        return self._take_text(keep), False

    def _inside(self, final: bool) -> tuple[list[Segment], bool]:
        """Find the closing fence of the open block; emit the block once it is complete."""
        body, opening = self._buf, self._opening or ""
        close = self._scan.closing(body, final)
        if close is None and final:
            fallback = _CLOSE.search(body)
            close = (fallback.start(), fallback.end()) if fallback else None
        if close is not None:
            start, end = close
            block = Block(self._tag, body[:start], opening + body[:end], True)
            self._buf, self._opening = body[end:], None
            return [block], True
        if final:
            self._buf, self._opening = "", None
            return [Block(self._tag, body, opening + body, False)], False
        return [], False


class _BodyScan:
    """Reads a block body as far as it has arrived, tracking JSON strings, to find the closing
    fence line; it stops early wherever the next characters are needed to decide."""

    def __init__(self) -> None:
        self.pos = 0
        self.in_string = False

    def closing(self, body: str, final: bool) -> tuple[int, int] | None:
        """Start and end of the closing fence in ``body``, or None (not there, or not yet)."""
        while (mark := _JSON_MARK.search(body, self.pos)) is not None:
            at, char = mark.start(), mark.group()
            if char == '"':
                self.in_string = not self.in_string
            elif char == "\\" and self.in_string:
                if at + 1 == len(body) and not final:
                    self.pos = at
                    return None
                at += 1  # skip the escaped character
            elif char == "\n" and not self.in_string:
                fence = _FENCE_LINE.match(body, at + 1)
                if fence is not None and (fence.end() < len(body) or final):
                    return at, fence.end()
                if not final and (fence or _FENCE_LINE_START.fullmatch(body, at + 1)):
                    self.pos = at
                    return None
            self.pos = at + 1
        self.pos = len(body)
        return None


def split_text(text: str) -> list[Segment]:
    """The whole text as segments, adjacent text merged."""
    splitter = FenceSplitter()
    out: list[Segment] = []
    for segment in (*splitter.feed(text), *splitter.close()):
        if isinstance(segment, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + segment.text)
        else:
            out.append(segment)
    return out
