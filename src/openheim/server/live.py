"""``Live``: one session the server keeps open, with its numbered frames.

A ``Live`` session outlives the WebSocket that opened it: its prompt runs in a task of the
server, every frame it produces (an event, an approval request, its answer) gets the next
sequence number and is kept in the session store (the last ``MAX_LOG`` of them), and any
connection may attach to it and first receive what came after the last number it saw. So a
client whose socket drops re-attaches and misses nothing, and a prompt goes on while no one
watches.

With the PostgreSQL store, replicas act as one server (``server.relay``): a session open here
while another replica runs its prompt forwards that prompt's frames from the store
(``server.follower``, ``Live.forward``), and a second prompt is refused here as there (the
store's lease, read off the event loop as the prompt starts).

Approval requests wait for an answer from any attached connection, with the choices of
``runtime.approvals``: ``once``, ``always``, ``reject`` or ``reject_always`` ("always" ones the
policy keeps for the session), a rejection with an optional reason for the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.errors import OpenheimError, SessionBusy
from openheim.events import Event, Failed, event_to_dict
from openheim.messages import Message
from openheim.redaction.secrets import redact_data
from openheim.runtime import Session, approvals
from openheim.server.redacting import EventRedactor
from openheim.server.start_gate import StartGate
from openheim.server.turns import Turn
from openheim.server.writer import FrameWriter
from openheim.store import SessionStore

log = logging.getLogger(__name__)

MAX_LOG = 10_000
"""Frames kept in memory per unsaved session for re-attaching."""
IDLE_CLOSE = 600.0
"""Seconds a session stays open with no one attached and no prompt running."""

_DELTAS = frozenset({"text_delta", "thinking_delta"})
_DELTA_KEYS = ("type", "text")
"""A delta's event dict, as ``EventRedactor`` makes it (``Live.publish_event``)."""


class Subscriber(Protocol):
    """A connection attached to a session: it gets each new frame as JSON text (``push``),
    and on attaching the frames it missed (``replay``)."""

    def push(self, frame: str) -> None: ...

    def replay(self, frames: list[str]) -> None: ...


def _stored(
    store: SessionStore, key: str, session_id: str, stale: bool
) -> tuple[bool, int, list[Message] | None]:
    """Whether another replica runs a prompt of ``key``, its last stored frame number, and
    its messages when another replica's prompt changed them (``stale``)."""
    elsewhere = store.held_elsewhere(key)
    return elsewhere, store.frames.last(key), store.messages(session_id) if stale else None


class Live:
    """One open session with its numbered frames, subscribers and pending approvals.

    A stored session's frames go to the store's frame log through the server's
    ``FrameWriter``, so a client can re-attach through any process that shares the store; an
    unsaved session's last ``max_log`` frames stay in memory."""

    def __init__(self, max_log: int = MAX_LOG, idle_close: float = IDLE_CLOSE) -> None:
        self.key = ""
        self.idle_close = idle_close
        self.on_idle: Callable[[Live], None] | None = None
        self._idle: asyncio.TimerHandle | None = None
        self.session: Session | None = None
        self.closer: Callable[[], Awaitable[None]] | None = None
        self.writer: FrameWriter | None = None
        self.seq = 0
        self.log: deque[tuple[int, str]] = deque(maxlen=max_log)
        self.subscribers: set[Subscriber] = set()
        self.pending: dict[str, tuple[int, str, asyncio.Future[Allow | Deny]]] = {}
        self.task: asyncio.Task[None] | None = None
        self.turn: Turn | None = None
        """The latest prompt and the last frame before it (``busy``: the running turn)."""
        self.gate: StartGate | None = None
        self._stop = asyncio.Event()
        self._quoted = ("", '""')
        """The key, and the key as JSON (for ``publish_event``)."""
        self.stale = False
        """Another replica ran a prompt here since the history was read (``follow``)."""
        self.starting = False
        """A prompt's start is reading the store (``start``): a second one is refused."""

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def publish(self, kind: str, body: dict[str, Any]) -> tuple[int, str]:
        """Number a frame, keep it and send it to every subscriber; its number and text."""
        self.seq += 1
        text = json.dumps({"type": kind, "session_id": self.key, "seq": self.seq, **body})
        return self._spread(text)

    def publish_event(self, event: dict[str, Any]) -> None:
        """``publish("event", {"event": event})``; a text or thinking delta (most events) is
        written out here, byte for byte as the general encoder would, without its walk."""
        text = event.get("text")
        if tuple(event) != _DELTA_KEYS or type(text) is not str or event["type"] not in _DELTAS:
            self.publish("event", {"event": event})
            return
        if self._quoted[0] != self.key:
            self._quoted = (self.key, json.dumps(self.key))
        self.seq += 1
        self._spread(
            f'{{"type": "event", "session_id": {self._quoted[1]}, "seq": {self.seq}, '
            f'"event": {{"type": "{event["type"]}", "text": {json.dumps(text)}}}}}'
        )

    def _spread(self, text: str) -> tuple[int, str]:
        """Keep the frame numbered ``seq`` and send it to every subscriber."""
        if self.writer is None:
            self.log.append((self.seq, text))
        else:
            self.writer.add(self.key, self.seq, text)
        for subscriber in list(self.subscribers):
            subscriber.push(text)
        return self.seq, text

    def follow(self, seq: int) -> None:
        """Frames up to ``seq`` were stored by another replica's prompt: send the attached
        clients those after ours, in order, and number on from there."""
        if self.busy or self.writer is None or seq <= self.seq:
            return
        if not self.subscribers:
            self.skip_to(seq)
            return
        self.forward(self.writer.store.frames.after(self.key, self.seq))

    def skip_to(self, seq: int) -> None:
        """Number on from ``seq``, stored elsewhere while no client was attached here."""
        self.stale = True
        self.seq = max(self.seq, seq)

    def forward(self, frames: Iterable[tuple[int, str]]) -> None:
        """Send the attached clients the frames another replica stored (read in order) that
        are past ours, each once; nothing while a prompt of this session runs here."""
        if self.busy:
            return
        for number, text in frames:
            if number > self.seq:
                self.skip_to(number)
                for subscriber in list(self.subscribers):
                    subscriber.push(text)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)
        self.watch_idle()

    def watch_idle(self) -> None:
        """Close the session (``on_idle``) once no one has been attached and no prompt has
        run for ``idle_close`` seconds; it can be resumed from the store."""
        if self.subscribers or self.busy or self._idle is not None or self.on_idle is None:
            return
        self._idle = asyncio.get_running_loop().call_later(self.idle_close, self._check_idle)

    def _check_idle(self) -> None:
        self._idle = None
        if not self.subscribers and not self.busy and self.on_idle is not None:
            self.on_idle(self)

    def since(self, after: int) -> list[tuple[int, str]]:
        """The kept frames numbered above ``after``, with their numbers, up to ``seq``: those
        stored later by another replica are forwarded by ``follow``, each once."""
        if self.writer is None:
            return [(seq, text) for seq, text in self.log if seq > after]
        self.writer.flush()
        frames = self.writer.store.frames
        if not self.busy:  # another replica's prompt may be storing more: up to date first
            self.follow(frames.last(self.key))
        return [(seq, text) for seq, text in frames.after(self.key, after) if seq <= self.seq]

    async def resolve(self, request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        """The session's ``Resolver``: ask every attached client, wait for the first answer."""
        approval_id = uuid.uuid4().hex
        future: asyncio.Future[Allow | Deny] = asyncio.get_running_loop().create_future()
        asked = approvals.question(request, ask)
        body = {
            "approval_id": approval_id,
            "tool_call_id": request.tool_call_id,
            "tool": request.tool,
            "title": asked.title,
            "why": asked.why,
            "arguments": redact_data(dict(request.arguments)),
            "reasons": list(asked.reasons),
            "detail": asked.diff,
            "choices": [choice.id for choice in approvals.CHOICES],
            "labels": {choice.id: choice.label for choice in approvals.CHOICES},
        }
        seq, text = self.publish("approval_request", body)
        self.pending[approval_id] = (seq, text, future)
        if self.writer is not None:  # the prompt waits: what it sent is stored, for any replica
            self.writer.flush()
        try:
            answer = await future
        finally:
            self.pending.pop(approval_id, None)
        return answer

    def answer(self, approval_id: str, choice: approvals.Choice, reason: str = "") -> bool:
        """Settle a pending approval (a rejection may tell the model ``reason``); False when
        there is none with that id."""
        found = self.pending.get(approval_id)
        if found is None or found[2].done():
            return False
        found[2].set_result(approvals.answer(choice, reason))
        self.publish("approval_resolved", {"approval_id": approval_id, "choice": choice.id})
        return True

    async def start(self, message: Message) -> None:
        """Run a prompt in a task of its own; SessionBusy while one runs, here or on another
        replica (the same refusal: the replicas act as one server). The store is read in a
        worker thread: its round trips never stop the event loop."""
        if self.busy or self.starting:
            raise SessionBusy(self.key, pid=0, host="this server")
        assert self.session is not None
        if self.writer is not None and self.session.id is not None:
            self.starting = True
            try:
                elsewhere, last, history = await asyncio.to_thread(
                    _stored, self.writer.store, self.key, self.session.id, self.stale
                )
            finally:
                self.starting = False
            if elsewhere:
                raise SessionBusy(self.key, pid=0, host="this server")
            self.seq = max(self.seq, last)  # after every frame another replica stored
            if history is not None:  # the conversation went on elsewhere: go on from it
                self.session.history[:], self.stale = history, False
        self._stop = asyncio.Event()
        self.turn = Turn(self.seq, len(self.session.history), message)
        self.task = asyncio.create_task(self._run(message))

    async def _run(self, message: Message) -> None:
        """The prompt, once the gate lets it begin (cancelled while it waits, it ends at once
        as cancelled, as at any other moment)."""
        assert self.session is not None
        try:
            if self.gate is not None:
                await self.gate.wait()
            redacted = EventRedactor()

            def show(event: Event) -> bool:
                for shown in redacted(event):
                    self.publish_event(shown)
                return True

            run = self.session.prompt(message, cancel=self._stop)
            run.tap = show  # a delta is published from the run's task, as this loop would
            async for event in run:
                show(event)
        except OpenheimError as err:
            failed = Failed(err.message, err.hint, type(err).__name__)
            self.publish("event", {"event": redact_data(event_to_dict(failed))})
        except Exception as err:  # a bug must not kill the server, and the client must know
            failed = Failed(f"the prompt failed: {type(err).__name__}", None, "InternalError")
            self.publish("event", {"event": redact_data(event_to_dict(failed))})
        finally:
            asyncio.get_running_loop().call_soon(self.watch_idle)  # once this task is done

    def cancel(self) -> None:
        """Cancel the running prompt (or the one waiting to begin); a pending approval counts
        as rejected."""
        self._stop.set()
        if self.session is not None:
            self.session.cancel()
        for _, _, future in list(self.pending.values()):
            if not future.done():
                future.set_result(Deny("the prompt was cancelled"))

    async def close(self) -> None:
        """Cancel the prompt, close the session (``closer``: where the hub keeps it), and
        wait for the prompt's task to end."""
        self.cancel()
        if self.closer is not None:
            await self.closer()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await self.task
