"""Wrappers that hand the provider's stream on: the same items and errors as re-yielding, the
inner stream closed with the wrapper's, and nothing of the wrapper's run per later item."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from openheim.errors import ContextOverflow, StreamCut
from openheim.events import ContextTrimmed, RetryNotice, TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, StreamItem, closing_stream
from openheim.providers.context import ContextFitter
from openheim.providers.relay import HandOn, Relay
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.testing import Reply, ScriptedProvider

REQUEST = ModelRequest("m", (Message.user("hi"),))


class Inner:
    """A stream of ``texts`` that may fail at its end, noting when it was closed."""

    def __init__(self, texts: list[str], error: Exception | None = None) -> None:
        self.texts = texts
        self.error = error
        self.closed = False

    async def stream(self) -> AsyncGenerator[StreamItem, None]:
        try:
            for text in self.texts:
                yield TextDelta(text)
            if self.error is not None:
                raise self.error
        finally:
            self.closed = True


async def head(
    inner: AsyncIterator[StreamItem], resumed: list[int]
) -> AsyncGenerator[StreamItem | HandOn, None]:
    async with closing_stream(inner) as stream:
        async for item in stream:
            resumed.append(1)
            yield item
            yield HandOn(stream)


async def test_after_the_hand_on_items_and_errors_come_from_the_inner_stream() -> None:
    inner, resumed = Inner(["a", "b", "c"], StreamCut("cut")), list[int]()
    relay = Relay(head(inner.stream(), resumed))
    seen = []
    with pytest.raises(StreamCut, match="cut"):
        async for item in relay:
            assert isinstance(item, TextDelta)
            seen.append(item.text)
    assert seen == ["a", "b", "c"]
    assert resumed == [1]  # the head saw the first item only
    await relay.aclose()
    assert inner.closed


async def test_closing_the_relay_midway_closes_the_inner_stream() -> None:
    inner = Inner(["a", "b", "c"])
    async with closing_stream(Relay(head(inner.stream(), []))) as relay:
        async for item in relay:
            if isinstance(item, TextDelta) and item.text == "b":
                break
    assert inner.closed


async def test_a_relay_before_its_hand_on_is_its_heads_stream() -> None:
    async def notices() -> AsyncGenerator[StreamItem | HandOn, None]:
        yield TextDelta("only")

    assert [item async for item in Relay(notices())] == [TextDelta("only")]


class Clock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


async def test_retry_retries_before_content_and_hands_on_after_it() -> None:
    async def breaks_late(request: ModelRequest) -> AsyncIterator[StreamItem]:
        for text in ["one", "two", "three"]:
            yield TextDelta(text)
        raise StreamCut("stream ended early")

    clock = Clock()
    inner = ScriptedProvider([StreamCut("early"), breaks_late, Reply("never used")])
    retrying = RetryingProvider(inner, RetryPolicy(), sleep=clock.sleep, jitter=lambda: 0.5)
    items: list[StreamItem] = []
    with pytest.raises(StreamCut, match="stream ended early"):
        async for item in retrying.stream(REQUEST):
            items.append(item)
    assert isinstance(items[0], RetryNotice)
    assert items[1:] == [TextDelta("one"), TextDelta("two"), TextDelta("three")]
    assert inner.remaining == 1 and len(clock.sleeps) == 1


async def test_a_context_overflow_after_content_is_final() -> None:
    async def overflows_late(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("partial")
        yield TextDelta("more")
        raise ContextOverflow("prompt is too long", status=400)

    inner = ScriptedProvider([overflows_late, Reply("never used")])
    items: list[StreamItem] = []
    with pytest.raises(ContextOverflow):
        async for item in ContextFitter(inner, None).stream(REQUEST):
            items.append(item)
    assert items == [TextDelta("partial"), TextDelta("more")]
    assert inner.remaining == 1


async def test_after_an_overflow_the_trimmed_call_is_handed_on_whole() -> None:
    turns = []
    for n in range(4):
        turns += [Message.user(f"q{n}"), Message.assistant(f"a{n}")]
    request = ModelRequest("m", (*turns, Message.user("now")))
    inner = ScriptedProvider([ContextOverflow("prompt is too long", status=400), Reply("ok")])
    items = [item async for item in ContextFitter(inner, None).stream(request)]
    assert isinstance(items[0], ContextTrimmed)
    assert items[1] == TextDelta("ok")
    assert len(inner.requests) == 2
