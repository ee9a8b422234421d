"""The repetition guard: a reply that has started repeating itself is stopped mid-stream.

Small models (and, now and then, large ones) fall into degenerate generation: the same phrase,
line or block again and again until the output limit, or the same line over and over among a
few others. ``RepetitionGuard`` wraps a provider (every chain member gets one, see
``openheim.runtime.provider``) and watches the text and thinking it streams. Once a channel
degenerates it closes the inner stream (a local model stops generating, an HTTP stream is
dropped) and ends with a ``Notice`` that says what happened and what to do, then a
``ModelResponse`` holding what came so far, with finish reason ``repetition``.

Two signs count as degenerate (``RepetitionDetector``), both chosen so that text which repeats
for good reason passes:

* an exact loop: the text ends with the same unit (a phrase, a line or a block of lines, with
  at least one letter in it) at least ``LOOP_REPEATS`` times in a row, covering at least
  ``LOOP_MIN_CHARS`` characters. A quote given twice, a rule of ``-----``, ``}`` closing
  nested blocks or a table of rows that differ are not loops;
* a line that keeps coming back: among the last ``LINE_WINDOW`` prose or list lines, one (list
  markers and numbers left out) appears ``LINE_REPEATS`` times. Lines inside fenced code and
  indented code lines do not count: code repeats lines such as ``return None`` for good reason
  (an exact loop of code is still caught by the first sign).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import AsyncIterator

from openheim.events import Notice, TextDelta, ThinkingDelta
from openheim.messages import Message, TextBlock, ThinkingBlock
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    StreamItem,
    closing_stream,
)

LOOP_REPEATS = 4
LOOP_MIN_CHARS = 200
LOOP_MAX_UNIT = 600
LINE_WINDOW = 20
LINE_REPEATS = 5
_TAIL = LOOP_MAX_UNIT * LOOP_REPEATS
_KEY = 8
_CANDIDATES = 8
_LIST_MARKER = re.compile(r"(?:[-*+•]|\d+[.)])\s+")

REPETITION = "repetition"
"""The finish reason of a reply the guard stopped (and the ``reason`` of the run's end)."""

ADVICE = (
    "the model started repeating itself ({what}), so its reply was stopped; small models do "
    "this often: use a larger one (`openheim models add`), or a hosted model by setting "
    "OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY"
)


class RepetitionDetector:
    """Fed a reply's text piece by piece; says when it has degenerated (module docstring)."""

    def __init__(self) -> None:
        self._tail = ""
        self._line = ""
        self._in_fence = False
        self._lines: deque[str] = deque(maxlen=LINE_WINDOW)
        self._counts: Counter[str] = Counter()
        self.found: str | None = None
        """What repeats, in a few words, once the text has degenerated."""

    def feed(self, text: str) -> bool:
        """Take the next piece; True once the text has degenerated."""
        if self.found is not None or not text:
            return self.found is not None
        self._tail = (self._tail + text)[-_TAIL:]
        unit = _loop_unit(self._tail)
        if unit is not None:
            self.found = f"the same {_describe(unit)} again and again"
            return True
        *complete, self._line = (self._line + text).split("\n")
        for line in complete:
            if (counted := self._count(line)) is not None:
                times = f"{LINE_REPEATS} times within {LINE_WINDOW} lines"
                self.found = f"the line {_shown(counted)} {times}"
                return True
        return False

    def _count(self, line: str) -> str | None:
        """Count one complete line; the line when it has now come back too often."""
        if line.lstrip().startswith("```"):
            self._in_fence = not self._in_fence
            return None
        key = _prose_line(line)
        if self._in_fence or key is None:
            return None
        if len(self._lines) == LINE_WINDOW:
            self._counts[self._lines[0]] -= 1
        self._lines.append(key)
        self._counts[key] += 1
        return key if self._counts[key] >= LINE_REPEATS else None


def _prose_line(line: str) -> str | None:
    """The line as counted (list marker left out), or None for a line that does not count:
    blank, without a letter, or indented code (an indented list item counts)."""
    body = line.strip()
    marker = _LIST_MARKER.match(body)
    if line[:1].isspace() and marker is None:
        return None
    if marker is not None:
        body = body[marker.end() :].strip()
    return body if any(c.isalpha() for c in body) else None


def _loop_unit(tail: str) -> str | None:
    """The unit ``tail`` ends with at least ``LOOP_REPEATS`` times in a row over at least
    ``LOOP_MIN_CHARS`` characters, when it has a letter; else None. The candidate periods are
    the distances back to earlier copies of the last few characters."""
    if len(tail) < LOOP_MIN_CHARS:
        return None
    key = tail[-_KEY:]
    end = len(tail) - _KEY
    before = end + _KEY - 1
    for _ in range(_CANDIDATES):
        start = tail.rfind(key, 0, before)
        if start < 0:
            return None
        period = end - start
        span = max(LOOP_MIN_CHARS, LOOP_REPEATS * period)
        if period > LOOP_MAX_UNIT or span > len(tail):
            return None
        window = tail[-span:]
        if window[period:] == window[:-period]:
            unit = tail[-period:]
            return unit if any(c.isalpha() for c in unit) else None
        before = start + _KEY - 1
    return None


def _describe(unit: str) -> str:
    lines = unit.count("\n")
    if lines > 1:
        return f"{lines} lines"
    text = unit.strip()
    return f"line {_shown(text)}" if lines == 1 and text else f"text {_shown(text)}"


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


class RepetitionGuard:
    """Wraps a provider; same protocol, with degenerate replies stopped (module docstring)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        text, thinking = RepetitionDetector(), RepetitionDetector()
        said: list[str] = []
        thought: list[str] = []
        async with closing_stream(self.inner.stream(request)) as items:
            async for item in items:
                yield item
                if isinstance(item, TextDelta):
                    said.append(item.text)
                    stopped = text.feed(item.text)
                elif isinstance(item, ThinkingDelta):
                    thought.append(item.text)
                    stopped = thinking.feed(item.text)
                else:
                    stopped = False
                if stopped:
                    break
            else:
                return
        what = text.found or thinking.found or ""
        yield Notice(ADVICE.format(what=what), "warning", "provider")
        blocks = (
            *((ThinkingBlock("".join(thought)),) if thought else ()),
            *((TextBlock("".join(said)),) if said else ()),
        )
        message = Message("assistant", blocks)
        yield ModelResponse(message, "repetition", model=request.model, raw_finish=REPETITION)
