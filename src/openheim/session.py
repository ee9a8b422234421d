"""``Session``: one conversation with an agent, persisted message by message.

The history is a list that writes each message to the store as the loop appends it, so a
process killed at any point loses at most the message in flight; the store repairs a tool call
left without its result the next time the session is loaded. A session runs one prompt at a
time: the prompt holds the session's lease, and a second process gets ``SessionBusy``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable
from typing import TYPE_CHECKING

from openheim.events import Event, IterationStart
from openheim.messages import Message
from openheim.secrets import redact_message

if TYPE_CHECKING:
    from openheim.loop import Agent
    from openheim.providers.base import ProviderSettings
    from openheim.store.base import Lease, SessionRecord, SessionStore


class PersistentHistory(list[Message]):
    """A history whose ``append`` stores the message first (one row, one transaction).

    The stored copy is redacted (``redact_message``); the list keeps the message as the model
    sent or will see it.
    """

    def __init__(self, store: SessionStore, session_id: str, messages: Iterable[Message]) -> None:
        super().__init__(messages)
        self.store = store
        self.session_id = session_id

    def append(self, message: Message) -> None:
        self.store.append(self.session_id, redact_message(message))
        super().append(message)


class Session:
    """An agent and its history; ``record`` and ``store`` are None for an unsaved session."""

    def __init__(
        self,
        agent: Agent,
        history: list[Message],
        *,
        record: SessionRecord | None = None,
        store: SessionStore | None = None,
        provider_settings: ProviderSettings | None = None,
    ) -> None:
        self.agent = agent
        self.provider_settings = provider_settings
        self.history = history
        self.record = record
        self.store = store

    @property
    def id(self) -> str | None:
        return self.record.id if self.record else None

    @property
    def saved(self) -> bool:
        return self.store is not None and self.record is not None

    async def prompt(
        self,
        content: str | Message,
        *,
        cancel: asyncio.Event | None = None,
        settled: asyncio.Event | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run one prompt; yields the run's events (the last one is ``Finished``). ``settled``
        is set once the run has written its last message, even if no one reads on."""
        message = content if isinstance(content, Message) else Message.user(content)
        with self._lease() as lease:
            self.history.append(message)
            run = self.agent.run(self.history, cancel=cancel, settled=settled)
            try:
                async with contextlib.aclosing(run) as events:  # closed with us: repaired now
                    async for event in events:
                        if lease is not None and isinstance(event, IterationStart):
                            lease.refresh()
                        yield event
            finally:
                self._store_totals()

    def _lease(self) -> contextlib.AbstractContextManager[Lease | None]:
        if self.store is None or self.record is None:
            return contextlib.nullcontext()
        return self.store.acquire(self.record.id)

    def _store_totals(self) -> None:
        if self.store is not None and self.record is not None:
            meter = self.agent.meter
            self.store.update(self.record.id, usage=meter.usage, cost=meter.cost)
