"""``StreamRedactor``: redaction of text that arrives in pieces, such as a model's deltas.

Redacting each piece alone misses a secret split across two of them, so the stream holds back
whatever may still be part of one (see the class). Every surface that shows streamed text (the
CLI renderers, an editor over ACP, a server) keeps one per stream.
"""

from __future__ import annotations

import re
import weakref
from typing import NamedTuple

from openheim.redaction.secrets import REDACTOR, Hit, Redactor, replace_hits


class StreamRedactor:
    """Redacts one stream of text pieces (a message's text deltas) as they come.

    A secret may arrive split over several pieces, so ``feed`` returns only the text that can
    no longer be part of one and holds back the rest: a match that may still grow, a piece
    that may begin a registered value, a format's trigger until its ``window`` or a ``stop``
    decides it. Ordinary prose passes at once, except a trailing character that may begin a
    trigger. ``flush`` returns what is held, at the end of the message or before anything
    else is shown. The last emitted characters are kept as context for the formats that look
    behind. One instance per stream; ``Redactor.redact`` of the joined text gives the same.
    """

    CONTEXT = 32
    """Emitted characters kept for the formats' look-behind and word-boundary checks."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = REDACTOR if redactor is None else redactor
        self._context = ""
        self._pending = ""

    def feed(self, piece: str) -> str:
        """The redacted text that ``piece`` lets out now (often all of it, maybe nothing)."""
        self._pending += piece
        text = self._context + self._pending
        if _quiet(text, self._redactor):  # the common case, decided without the full search
            out, self._pending = self._pending, ""
            self._context = text[-self.CONTEXT :]
            return out
        return self._emit(flush=False)

    @property
    def idle(self) -> bool:
        """Nothing held and no context: ``flush`` would return nothing and change nothing."""
        return not self._pending and not self._context

    def flush(self) -> str:
        """The redacted rest, held back so far; the stream starts afresh."""
        out = self._emit(flush=True)
        self._context = ""
        return out

    def _emit(self, *, flush: bool) -> str:
        text = self._context + self._pending
        base = len(self._context)
        hits = self._redactor.hits(text)
        cut = len(text) if flush else _safe_cut(text, base, hits, self._redactor)
        if cut <= base:
            return ""
        out = replace_hits(text, hits, base, cut)
        self._context, self._pending = text[max(0, cut - self.CONTEXT) : cut], text[cut:]
        return out


def _safe_cut(text: str, base: int, hits: list[Hit], redactor: Redactor) -> int:
    """The end of the part of ``text`` (from ``base``) that holds no secret still arriving."""
    end = len(text)
    cut = min([end, *(h.start for h in hits if h.end == end)])  # a match that may grow
    cut = min(cut, _undecided(text, base, redactor))
    moved = True
    while moved:  # never inside a match
        inside = [h.start for h in hits if h.start < cut < h.end]
        moved = bool(inside)
        cut = min([cut, *inside])
    return cut


def _undecided(text: str, base: int, redactor: Redactor) -> int:
    """The first position from ``base`` where a secret may begin that ``text`` cannot show
    whole yet: the start of a registered value, or a format trigger not yet decided."""
    end = first = len(text)
    for value in redactor.values:
        for i in range(max(base, end - len(value) + 1), first):
            if value.startswith(text[i:]):
                first = i
                break
    lowered = text.lower()
    for fmt in redactor.formats:
        for trigger in fmt.triggers:
            begin = max(base, end - fmt.window)
            first = min(first, _open_trigger(lowered, trigger, begin, fmt.stops))
    return first


def _open_trigger(lowered: str, trigger: str, begin: int, stops: str) -> int:
    """The first occurrence of ``trigger`` from ``begin`` (or of its beginning, at the end)
    that no stop character after it rules out, else ``len(lowered)``."""
    end = len(lowered)
    at = lowered.find(trigger, begin)
    while at != -1:
        if not any(c in lowered[at + len(trigger) :] for c in stops):
            return at
        at = lowered.find(trigger, at + 1)
    for size in range(min(len(trigger) - 1, end - begin), 0, -1):
        if lowered.endswith(trigger[:size]):
            return end - size
    return end


class _Marks(NamedTuple):
    """What ``_quiet`` looks for, made once per redactor from its formats."""

    triggers: re.Pattern[str]
    """Any trigger of any format."""
    beginnings: dict[str, tuple[str, ...]]
    """The proper beginnings of the triggers, by their last character."""


_MARKS: weakref.WeakKeyDictionary[Redactor, _Marks] = weakref.WeakKeyDictionary()


def _marks(redactor: Redactor) -> _Marks:
    found = _MARKS.get(redactor)
    if found is None:
        triggers = [t for fmt in redactor.formats for t in fmt.triggers]
        beginnings: dict[str, tuple[str, ...]] = {}
        for begun in {t[:size] for t in triggers for size in range(1, len(t))}:
            beginnings[begun[-1]] = (*beginnings.get(begun[-1], ()), begun)
        pattern = "|".join(map(re.escape, triggers)) or "(?!)"
        found = _MARKS[redactor] = _Marks(re.compile(pattern), beginnings)
    return found


def _quiet(text: str, redactor: Redactor) -> bool:
    """Whether ``text`` holds no secret and no beginning of one at its end: no trigger of a
    format anywhere, no registered value, no beginning of a trigger or of a value at the end.
    Then ``_emit`` would let all of it out unchanged; this asks less (one search and a few
    suffix checks for a typical delta instead of a pass per format and trigger), and says
    False whenever it is unsure, leaving the decision to ``_emit``."""
    if not text:
        return True
    marks = _marks(redactor)
    lowered = text.lower()
    if marks.triggers.search(lowered) is not None:
        return False
    if any(lowered.endswith(b) for b in marks.beginnings.get(lowered[-1], ())):
        return False
    values = redactor.values
    return not values or not (redactor.finds(text) or any(_ends_in(text, v) for v in values))


def _ends_in(text: str, value: str) -> bool:
    """Whether ``text`` (not empty) ends with a proper beginning of ``value``."""
    last = text[-1]
    at = value.find(last, 0, len(value) - 1)
    while at != -1:
        if text.endswith(value[: at + 1]):
            return True
        at = value.find(last, at + 1, len(value) - 1)
    return False
