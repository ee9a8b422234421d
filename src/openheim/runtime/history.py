"""``PersistentHistory``: a session's messages, each stored as the loop appends it.

A process killed at any point loses at most the messages in flight; the store repairs a tool
call left without its result the next time the session is loaded.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from openheim.messages import Message
from openheim.redaction.secrets import redact_message

if TYPE_CHECKING:
    from openheim.store.base import SessionStore


class PersistentHistory(list[Message]):
    """A history whose ``append`` stores the message first (one row, one transaction).

    While a prompt runs (``deferred``), ``append`` hands the write to the store's writing thread
    (``SessionStore.later``) instead of making the event loop wait for it, and the prompt's
    stream waits for ``saved()`` before it hands on its next event: no event after a message
    is seen, and no tool runs, before that message is stored.

    The stored copy is redacted (``redact_message``); the list keeps the message as the model
    sent or will see it.
    """

    def __init__(self, store: SessionStore, session_id: str, messages: Iterable[Message]) -> None:
        super().__init__(messages)
        self.store = store
        self.session_id = session_id
        self.deferred = False
        self.unsaved: list[asyncio.Future[None]] = []
        """The writes handed over and not yet known to be stored."""

    def append(self, message: Message) -> None:
        if self.deferred:
            self.unsaved.append(self.store.later(functools.partial(self._store, message)))
        else:
            self._store(message)
        super().append(message)

    def _store(self, message: Message) -> None:
        self.store.append(self.session_id, redact_message(message))

    async def saved(self) -> None:
        """Wait until every write handed over is stored; raise the error of the first that
        failed. A cancel while waiting leaves the writes going on, and still tracked."""
        while self.unsaved:
            await asyncio.wait(self.unsaved)
            done = [future for future in self.unsaved if future.done()]
            self.unsaved = [future for future in self.unsaved if not future.done()]
            for future in done:
                future.result()
