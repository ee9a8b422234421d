"""Compaction: a session's older turns replaced, in what the model is sent, by a summary.

``Compactor`` wraps a session's provider. Before each model call it estimates the request
(``providers.context.estimate_tokens``); above ``threshold`` of the model's context window it
compacts: the oldest whole turns (a turn starts at a user prompt, so every tool call stays with
its result) are summarised by the model (``[compaction] model``, default the session's) and the
summary takes their place at the head of the first turn kept. The system prompt, the tools,
the latest turns and the user's pinned prompts (verbatim, ``pin_prompt``; the store keeps the
pins) are always sent.

It never wedges a session: when the summary fails or is not smaller than what it replaces,
the turns are left out instead (a trim) and the event says why; a cancelled compaction
changes nothing, so the next request compacts again. The summary request itself is chunked to
fit (``runtime.summary``).

The history is never changed: the loop and the store keep every message, so an export or a
replay shows the whole conversation. Each compaction is one ``ContextCompacted`` event with
the request's estimated tokens before and after, and one entry of the store's compaction log,
from which a resumed session starts (``restore``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

from openheim.config.load import Settings
from openheim.errors import ConfigError
from openheim.events import ContextCompacted
from openheim.messages import Message, TextBlock
from openheim.providers.base import (
    ModelRequest,
    Provider,
    ProviderSettings,
    StreamItem,
    closing_stream,
)
from openheim.providers.context import estimate_tokens, turn_starts
from openheim.providers.windows import context_window
from openheim.redaction.secrets import redact, redact_message
from openheim.runtime.store_writes import off_loop
from openheim.runtime.summary import summarise
from openheim.store.compactions import Compaction, Method

if TYPE_CHECKING:
    from openheim.loop import Agent
    from openheim.runtime.session import Session

DEFAULT_THRESHOLD = 0.8
KEEP_SHARE = 0.5
"""After an automatic compaction the latest turns kept fill at most this share of the
threshold, so the next compaction is some turns away."""
SUMMARY_HEAD = "[Summary of the earlier conversation, which was compacted:]\n{summary}"
TRIM_NOTE = "[{n} earlier messages were left out here to fit the model's context window.]"
PINNED_HEAD = "[Pinned by the user, kept from the earlier conversation:]"

Record = Callable[[Compaction], None]


class Compactor:
    """A provider wrapper that compacts a session's older turns into a summary."""

    def __init__(
        self,
        inner: Provider,
        window: Callable[[str], int],
        *,
        threshold: float = DEFAULT_THRESHOLD,
        model: str | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.window = window
        self.threshold = threshold
        """Share of the window that triggers a compaction; 0 turns automatic compaction off."""
        self.model = model
        self.covered = 0
        """How many leading messages of the history the head replaces."""
        self.head = ""
        self.pinned: set[int] = set()
        """Indices of user prompts sent verbatim even when compacted away."""
        self.record: Record | None = None
        self.record_pin: Callable[[int], None] | None = None
        self._anchor: Message | None = None
        """The last covered message itself: while it is still in place, so is the history."""

    def restore(self, entry: Compaction | None, history: Sequence[Message]) -> None:
        """Start from a stored compaction, unless the history is no longer the one it
        compacted (shorter, or rewound by an undo and grown again)."""
        if entry is None or not 0 < entry.covered < len(history):
            return
        if prefix_digest(history[: entry.covered]) == entry.digest:
            self.covered, self.head = entry.covered, entry.head
            self._anchor = history[entry.covered - 1]

    async def aclose(self) -> None:
        await self.inner.aclose()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The inner provider's stream of the request as compacted; a request over the
        threshold is compacted first (then its ``ContextCompacted`` leads the stream). Below
        it, the inner stream is returned as it is: no layer of ours on every delta."""
        if self.threshold and self._over(request):
            return self._compacting(request)
        return self.inner.stream(self.view(request))

    async def _compacting(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        compacted = await self.compact(request)
        if compacted is not None:
            yield compacted
        async with closing_stream(self.inner.stream(self.view(request))) as stream:
            async for item in stream:
                yield item

    def _over(self, request: ModelRequest) -> bool:
        return estimate_tokens(self.view(request)) > self.threshold * self.window(request.model)

    def view(self, request: ModelRequest) -> ModelRequest:
        """The request as the model is sent it: the head in place of the covered messages.

        A history rewound below the last message covered (an undo) ends the compaction: the
        head no longer stands for what precedes the cut, so the next request compacts anew."""
        messages = request.messages
        if self.covered and not (
            self.covered < len(messages) and messages[self.covered - 1] is self._anchor
        ):
            self.covered, self.head, self._anchor = 0, "", None
            self.pinned = {i for i in self.pinned if i < len(messages)}
        return self._view(request, self.covered, self.head)

    def _view(self, request: ModelRequest, covered: int, head: str) -> ModelRequest:
        messages = request.messages
        if not covered or covered >= len(messages):
            return request
        kept = list(messages[covered:])
        texts = [head, *self._pinned_texts(messages, covered)]
        block = TextBlock("\n\n".join(t for t in texts if t))
        kept[0] = Message(kept[0].role, (block, *kept[0].content))
        return dataclasses.replace(request, messages=tuple(kept))

    def _pinned_texts(self, messages: Sequence[Message], covered: int) -> list[str]:
        texts = [messages[i].text for i in sorted(self.pinned) if i < covered]
        return [PINNED_HEAD, *texts] if texts else []

    def pin(self, index: int) -> None:
        """Keep the user prompt at ``index`` of the history verbatim in every compaction."""
        self.pinned.add(index)
        if self.record_pin is not None:
            self.record_pin(index)

    async def compact(
        self, request: ModelRequest, *, forced: bool = False
    ) -> ContextCompacted | None:
        """Compact ``request``'s history now; None when there is nothing older to compact.

        ``forced`` (an on-demand compaction) keeps only the latest turn; otherwise the latest
        turns that fit ``KEEP_SHARE`` of the threshold are kept."""
        cut = self._cut(request, forced)
        if cut is None:
            return None
        before = estimate_tokens(self.view(request))
        head, method, reason = await self._summary(request.model, request.messages, cut)
        after = estimate_tokens(self._view(request, cut, head))
        if method == "summary" and after >= before:
            head, method = self._trim_head(cut), "trim"
            reason = "the summary was not smaller than what it replaced"
            after = estimate_tokens(self._view(request, cut, head))
        self.covered, self.head, self._anchor = cut, head, request.messages[cut - 1]
        if self.record is not None:
            digest = prefix_digest(request.messages[:cut])
            self.record(Compaction(cut, head, method, before, after, time.time(), digest))
        return ContextCompacted(before, after, cut, method, reason)

    def _cut(self, request: ModelRequest, forced: bool) -> int | None:
        """Where the kept turns start: a turn start after what is already covered."""
        messages = request.messages
        starts = [s for s in turn_starts(messages) if s > self.covered]
        if not starts:
            return None
        if forced:
            return starts[-1]
        budget = self.window(request.model) * (self.threshold or DEFAULT_THRESHOLD) * KEEP_SHARE
        for start in starts:
            if estimate_tokens(dataclasses.replace(request, messages=messages[start:])) <= budget:
                return start
        return starts[-1]

    async def _summary(
        self, model: str, messages: Sequence[Message], cut: int
    ) -> tuple[str, Method, str | None]:
        """The head that replaces the messages before ``cut``, how it was made and, for a
        trim, why. A cancellation propagates (nothing has changed yet)."""
        writer = self.model or model
        old = messages[self.covered : cut]
        try:
            summary = await summarise(
                self.inner, writer, self.head or None, old, self.window(writer)
            )
        except Exception as err:  # any failure falls back to a trim: a session never wedges
            reason = f"the summary failed ({type(err).__name__}: {err})"
            return self._trim_head(cut), "trim", reason
        return SUMMARY_HEAD.format(summary=summary), "summary", None

    def _trim_head(self, cut: int) -> str:
        """The head of a trim: what was there before, and a note of the messages left out."""
        note = TRIM_NOTE.format(n=cut - self.covered)
        return f"{self.head}\n\n{note}" if self.head else note


def compacting(provider: Provider, settings: Settings, chosen: ProviderSettings) -> Compactor:
    """``provider`` wrapped for compaction as ``[compaction]`` says, on ``chosen``'s windows."""
    entry = settings.compaction
    window = functools.partial(context_window, chosen)
    return Compactor(provider, window, threshold=entry.threshold, model=entry.model)


async def attach(session: Session, compactor: Compactor) -> None:
    """Make ``compactor`` the session's: a stored session starts from its last compaction
    and records each new one in the store's compaction log (redacted, as messages are). The
    log is read by the store's writing thread, off the event loop."""
    session.compactor = compactor
    store, record = session.store, session.record
    if store is None or record is None:
        return
    log = store.compactions
    latest, pins = await off_loop(store, lambda: (log.latest(record.id), log.pins(record.id)))
    compactor.restore(latest, session.history)
    compactor.pinned.update(i for i in pins if i < len(session.history))
    compactor.record_pin = lambda index: log.pin(record.id, index)
    compactor.record = lambda entry: log.append(
        record.id, dataclasses.replace(entry, head=redact(entry.head))
    )


def pin_prompt(session: Session, index: int | None = None) -> Message:
    """Pin the user prompt at ``index`` of the session's history (default: the latest), so
    compactions send it verbatim; the prompt pinned. ConfigError when there is no such prompt."""
    history = session.history
    prompts = turn_starts(history)
    chosen = prompts[-1] if index is None and prompts else index
    if chosen is None or chosen not in prompts or session.compactor is None:
        raise ConfigError(
            "there is no prompt of yours to pin"
            if index is None
            else f"message {index} is not a prompt of yours",
            hint="pin a prompt you typed (the latest one by default)",
        )
    session.compactor.pin(chosen)
    return history[chosen]


def prefix_digest(messages: Sequence[Message]) -> str:
    """SHA-256 of ``messages`` as the store keeps them (redacted, as JSON)."""
    data = [redact_message(m).to_dict() for m in messages]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def pinned_line(prompt: Message) -> str:
    """What a surface says once ``prompt`` is pinned."""
    text = " ".join(prompt.text.split())
    return f"pinned: {text[:60]}{'…' if len(text) > 60 else ''}"


def request_for(agent: Agent, history: Sequence[Message]) -> ModelRequest:
    """The request the agent's next model call would send on ``history``."""
    return ModelRequest(
        model=agent.model,
        messages=tuple(history),
        system=agent.system,
        tools=agent.tools.specs,
        max_tokens=agent.max_tokens,
    )
