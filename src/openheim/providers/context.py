"""Context fitting: keep a request inside the model's context window without touching history.

``ContextFitter`` wraps a provider. Given the model's context window (a number, or a function of
the requested model, as the runtime gives it from ``providers.windows.context_window``) it
estimates each request and, above 90 % of the window, leaves the oldest whole turns out of the
request (a turn starts at a
user prompt, so a tool call is never split from its result and the current turn is never cut),
with a note where the cut is. If the provider still answers "prompt too long", it trims further
and sends once more. The stored history is never changed: only the request is. Each cut is
announced with a ``ContextTrimmed`` event. When even the current turn alone does not fit, the
error says to start a new session.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from openheim.errors import ContextOverflow
from openheim.events import ContextTrimmed
from openheim.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.providers.base import ModelRequest, Provider, StreamItem, closing_stream, is_content
from openheim.providers.relay import HandOn, Relay

FILL_RATIO = 0.9
CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1600
CUT_NOTE = "[{n} earlier messages were left out here to fit the model's context window.]"

Window: TypeAlias = int | Callable[[str], int] | None
"""A context window in tokens, or a function from the requested model to it; None: unknown (the
request is trimmed only once the provider says it is too long)."""


def _block_chars(block: ContentBlock) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ThinkingBlock):
        return len(block.thinking) + len(block.signature or "")
    if isinstance(block, ToolUseBlock):
        return len(block.name) + len(block.arguments_json)
    if isinstance(block, ToolResultBlock):
        return len(block.content) + len(block.images) * IMAGE_TOKENS * CHARS_PER_TOKEN
    assert isinstance(block, ImageBlock)
    return IMAGE_TOKENS * CHARS_PER_TOKEN


_SCHEMA_CHARS: dict[int, tuple[Mapping[str, Any], int]] = {}
"""The JSON length of tool schemas by ``id``, with the schema itself (so the id stays its own).
Tools share their schema objects across requests and sessions; each is serialised once."""
SCHEMA_CACHE = 4096


def _schema_chars(schema: Mapping[str, Any]) -> int:
    found = _SCHEMA_CHARS.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    if len(_SCHEMA_CHARS) >= SCHEMA_CACHE:
        _SCHEMA_CHARS.clear()
    size = len(json.dumps(dict(schema)))
    _SCHEMA_CHARS[id(schema)] = (schema, size)
    return size


def estimate_tokens(request: ModelRequest) -> int:
    """A rough token count of the whole request (4 characters a token, plus overheads)."""
    chars = len(request.system or "")
    chars += sum(_schema_chars(t.parameters) + len(t.description) for t in request.tools)
    for message in request.messages:
        chars += 16 + sum(_block_chars(b) + 8 for b in message.content)
    return chars // CHARS_PER_TOKEN + 1


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of the user prompts that open turns (tool-result messages continue a turn)."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content)
    ]


def _cut(request: ModelRequest, start: int) -> ModelRequest:
    kept = list(request.messages[start:])
    note = TextBlock(CUT_NOTE.format(n=start))
    kept[0] = Message(kept[0].role, (note, *kept[0].content))
    return dataclasses.replace(request, messages=tuple(kept))


def fit(request: ModelRequest, budget: int) -> tuple[ModelRequest, int]:
    """The request trimmed to ``budget`` tokens and how many messages were left out.

    Raises ContextOverflow if only cutting into the current turn would do.
    """
    if estimate_tokens(request) <= budget:
        return request, 0
    for start in turn_starts(request.messages)[1:]:
        trimmed = _cut(request, start)
        if estimate_tokens(trimmed) <= budget:
            return trimmed, start
    raise _too_big(request, f"the {budget} tokens available in the model's context window")


def cut_further(request: ModelRequest, dropped: int) -> tuple[ModelRequest, int]:
    """After a "prompt too long" error: leave out the older half of the turns still sent."""
    later = [s for s in turn_starts(request.messages)[1:] if s > dropped]
    if not later:
        raise _too_big(request, "what the provider accepts")
    start = later[len(later) // 2]
    return _cut(request, start), start


def _too_big(request: ModelRequest, limit: str) -> ContextOverflow:
    starts = turn_starts(request.messages)
    current = request.messages[starts[-1] if starts else 0 :]
    alone = estimate_tokens(dataclasses.replace(request, messages=current))
    return ContextOverflow(
        f"the current turn alone needs about {alone} tokens, more than {limit}",
        hint="start a new session, shorten the prompt or attachments, or use a model with a "
        "larger context_window",
    )


class ContextFitter:
    """A provider wrapper that fits each request into its model's context window."""

    def __init__(self, inner: Provider, context_window: Window) -> None:
        self.inner = inner
        self.name = inner.name
        self.context_window = context_window

    async def aclose(self) -> None:
        await self.inner.aclose()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        return Relay(self._fitted(request))

    async def _fitted(self, request: ModelRequest) -> AsyncGenerator[StreamItem | HandOn, None]:
        """The call with the request fitted; once content was forwarded the inner stream is
        handed on (a "prompt too long" after that is final)."""
        window = self.context_window
        if callable(window):
            window = window(request.model)
        fitted, dropped = request, 0
        if window:
            fitted, dropped = fit(request, int(window * FILL_RATIO))
            if dropped:
                yield ContextTrimmed(dropped, len(request.messages))
        try:
            async with closing_stream(self.inner.stream(fitted)) as stream:
                async for item in stream:
                    yield item
                    if is_content(item):
                        yield HandOn(stream)
        except ContextOverflow:
            refitted, dropped = cut_further(request, dropped)
            yield ContextTrimmed(dropped, len(request.messages))
            async with closing_stream(self.inner.stream(refitted)) as stream:
                yield HandOn(stream)
