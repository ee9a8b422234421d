"""The turn a session of the server is running, as a client attaching mid-turn must see it.

A turn's messages are stored one by one as they complete, while its frames stream: a client
that opened the session from its stored messages and attached after the newest frame would
miss the start of the answer being streamed. So a session opened mid-turn is shown as its
stored messages from before the turn, the turn's prompt, and every frame of the turn replayed
from the frame log (``Turn.seq``): the whole turn so far, each part once.
"""

from __future__ import annotations

from dataclasses import dataclass

from openheim.messages import Message
from openheim.redaction.secrets import redact_message


@dataclass(frozen=True)
class Turn:
    """A running turn: the number of the last frame before it, how many messages the
    session's history held before it, and its prompt."""

    seq: int
    before: int
    prompt: Message


def before_turn(stored: list[Message], turn: Turn) -> list[Message]:
    """The stored messages from before ``turn``, then its prompt as the store keeps it
    (redacted). A session's history and its stored messages are the same list (an undo rewinds
    both; a compaction changes neither), so the first ``turn.before`` are those before it."""
    return [*stored[: turn.before], redact_message(turn.prompt)]
