"""The session store interface: what the runtime and the surfaces may ask of any backend.

The embedded default is SQLite (``openheim.store.sqlite``); a server fleet can share PostgreSQL
behind the same interface without touching callers. Every method is synchronous and short (one
small transaction), so async callers run them directly.

Its errors (``SessionNotFound``, ``SessionBusy``, ``SessionExists``, ``StoreError``) are in the
error tree of ``openheim.errors``; they are importable from here too.
"""

from __future__ import annotations

import asyncio
import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple, Protocol, Self, TypeVar

from openheim.errors import SessionBusy as SessionBusy
from openheim.errors import SessionExists as SessionExists
from openheim.errors import SessionNotFound as SessionNotFound
from openheim.errors import StoreError as StoreError
from openheim.messages import Message, ToolResultBlock, Usage

if TYPE_CHECKING:
    from openheim.store.compactions import CompactionLog
    from openheim.store.frames import FrameLog

_T = TypeVar("_T")

TITLE_MAX = 80
"""Longest title taken from the first prompt, in characters."""

MIN_PREFIX = 6
"""Shortest id prefix ``get`` accepts."""

INTERRUPTED = "interrupted: the process stopped before this tool call finished"
"""The error result written for a tool call that never got one (see ``repair_history``)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session's metadata; its messages are read apart with ``SessionStore.messages``."""

    id: str
    """A UUID4 in its 36-character form (dashes included)."""
    title: str
    cwd: str
    provider: str
    model: str
    skills: list[str]
    created_at: float
    """Epoch seconds."""
    updated_at: float
    """Epoch seconds of the last append; unique within one store, so it is an exact cursor."""
    usage: Usage = field(default_factory=Usage)
    """Token totals of the whole session, as the runtime last stored them."""
    cost: float | None = None
    """US dollars so far, or None when the model has no known price."""
    parent_id: str | None = None
    """The session this one was forked from, if any."""
    message_count: int = 0


class SearchHit(NamedTuple):
    """A session whose messages match a search; ``snippet`` marks the matches with ``**``."""

    session_id: str
    title: str
    snippet: str


class Lease(ABC):
    """The right to run one prompt in a session; release it when the prompt ends.

    A lease is held by one ``acquire`` call, not by a process: a second ``acquire`` of the same
    session fails with ``SessionBusy`` even from the holder's own process. Call ``refresh``
    during long prompts (at least once a minute) so other hosts do not take it over as stale.
    """

    session_id: str
    timeout: float = 300.0
    """Seconds without a refresh after which another machine may take the lease over."""

    @abstractmethod
    def release(self) -> None:
        """Give the lease up; releasing twice, or after a takeover, does nothing."""

    @abstractmethod
    def refresh(self) -> None:
        """Renew the heartbeat; raises ``SessionBusy`` when another holder took it over."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class SessionStore(Protocol):
    """Sessions, their append-only messages, full-text search, per-session leases and the
    numbered frames a server sent for each session (``frames``, a ``FrameLog``) and where its
    context was compacted (``compactions``, a ``CompactionLog``)."""

    frames: FrameLog
    compactions: CompactionLog

    def create(
        self,
        *,
        cwd: str,
        provider: str,
        model: str,
        skills: Iterable[str] = (),
        title: str = "",
        parent_id: str | None = None,
    ) -> SessionRecord:
        """A new empty session with a fresh UUID4 id."""
        ...

    def get(self, session_id: str) -> SessionRecord:
        """The session with this id, or the only one whose id starts with it (≥ 6 chars)."""
        ...

    def latest(self, cwd: str) -> SessionRecord | None:
        """The most recently updated session in ``cwd``."""
        ...

    def list(
        self, *, cwd: str | None = None, limit: int = 50, before: float | None = None
    ) -> builtins.list[SessionRecord]:
        """Sessions newest updated first; pass the last ``updated_at`` as ``before`` for more."""
        ...

    def messages(self, session_id: str) -> builtins.list[Message]:
        """All messages in order, repaired (see ``repair_history``); the repair is persisted."""
        ...

    def append(self, session_id: str, message: Message) -> None:
        """Add one message in one transaction; bumps ``updated_at`` and sets an empty title."""
        ...

    def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        skills: Iterable[str] | None = None,
        usage: Usage | None = None,
        cost: float | None = None,
    ) -> None:
        """Replace the given fields (``usage`` and ``cost`` are totals, not increments)."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove a session and its messages; its forks keep living without a parent."""
        ...

    def search(self, text: str, *, limit: int = 20) -> builtins.list[SearchHit]:
        """Sessions whose message text matches every word of ``text``, best match first."""
        ...

    def acquire(self, session_id: str) -> Lease:
        """The session's lease, taking over a stale one; ``SessionBusy`` while it is held."""
        ...

    def held_elsewhere(self, session_id: str) -> bool:
        """Whether a live prompt of another process holds the session's lease."""
        return False

    def later(self, write: Callable[[], _T]) -> asyncio.Future[_T]:
        """Run ``write`` (calls of this store) off the event loop, committed together with the
        writes queued with it; the future is settled once it is stored (or failed)."""
        ...

    def restore(
        self, record: SessionRecord, messages: Sequence[Message], *, replace: bool = False
    ) -> SessionRecord:
        """Write a whole session as given (imports, export round trips); returns it as stored.

        Raises ``SessionExists`` when the id is taken and ``replace`` is false.
        """
        ...

    def close(self) -> None:
        """Release the backend's resources; the store is unusable afterwards."""
        ...


def title_from(message: Message) -> str:
    """The title a session takes from its first prompt: the user's text on one line, cut short.

    Empty for messages that carry no user text (tool results, assistant replies).
    """
    if message.role != "user":
        return ""
    words = " ".join(message.text.split())
    if len(words) <= TITLE_MAX:
        return words
    return words[: TITLE_MAX - 1].rstrip() + "…"


def repair_history(messages: Sequence[Message]) -> builtins.list[Message]:
    """The history with an error result for every tool call that never got one.

    A process killed while tools ran leaves an assistant message whose tool calls have no result
    in the following message; every provider rejects such a history. Each missing result is
    added to the following user message (after the results it has) or, when none follows, in a
    new user message right after the assistant message.
    """
    out: builtins.list[Message] = []
    owed: tuple[ToolResultBlock, ...] = ()
    for index, message in enumerate(messages):
        if owed and message.role == "user":
            message = _with_results(message, owed)
        elif owed:
            out.append(Message("user", owed))
        out.append(message)
        following = messages[index + 1] if index + 1 < len(messages) else None
        owed = _missing_results(message, following)
    if owed:
        out.append(Message("user", owed))
    return out


def _missing_results(message: Message, following: Message | None) -> tuple[ToolResultBlock, ...]:
    """Error results for the tool calls of ``message`` that ``following`` does not answer."""
    if message.role != "assistant" or not message.tool_uses:
        return ()
    answered: set[str] = set()
    if following is not None and following.role == "user":
        answered = {b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)}
    return tuple(
        ToolResultBlock(use.id, INTERRUPTED, is_error=True)
        for use in message.tool_uses
        if use.id not in answered
    )


def _with_results(message: Message, results: Sequence[ToolResultBlock]) -> Message:
    """``message`` with ``results`` after its own tool results and before everything else."""
    own = [b for b in message.content if isinstance(b, ToolResultBlock)]
    rest = [b for b in message.content if not isinstance(b, ToolResultBlock)]
    return Message("user", (*own, *results, *rest))
