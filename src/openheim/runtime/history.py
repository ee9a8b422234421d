"""``PersistentHistory``: a session's messages, each stored as the loop appends it.

A process killed at any point loses at most the message in flight; the store repairs a tool call
left without its result the next time the session is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from openheim.messages import Message
from openheim.secrets import redact_message

if TYPE_CHECKING:
    from openheim.store.base import SessionStore


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
