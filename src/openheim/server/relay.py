"""``Relay``: what replicas sharing a PostgreSQL store tell each other, over ``LISTEN/NOTIFY``.

Every batch of frames stored names its sessions and their highest numbers on the frames channel
(``store.postgres.FRAMES_CHANNEL``, sent on commit). A replica whose clients are attached to
a session that a prompt on another replica runs reads those frames from the store's frame log
and forwards them in order (``server.follower``). Approval answers and cancels sent to a replica
that does not run the prompt go out on the control channel, and the replica that runs it
applies them (``Hub.controlled``). A client attaching to a replica while another runs the
prompt is told it is busy and sent the approval requests still waiting (``asked_elsewhere``),
and each replica tells its ``watch_busy`` clients when a prompt begins or ends on any replica
(``share_busy``, and ``on_busy`` on the others).

One listening connection per replica, not per session. When it drops (PostgreSQL restarted),
the relay connects again, within ``RETRY_MAX`` seconds between tries, and catches up with the
frames stored meanwhile. With the SQLite store (one process) there is no relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from openheim.redaction.secrets import redact
from openheim.runtime import approvals
from openheim.server.follower import ANY, RETRY_MAX, RETRY_MIN, Follower
from openheim.store.frame_notices import stored

if TYPE_CHECKING:
    from openheim.server.hub import Hub
    from openheim.server.live import Live
    from openheim.store import SessionStore
    from openheim.store.postgres import PostgresStore

log = logging.getLogger(__name__)

MAX_PAYLOAD = 7000
"""Bytes of a control message at most (PostgreSQL takes 8000 per ``NOTIFY``)."""
TURN_ENDS = ("finished", "failed")
"""The events that end a prompt's frames: no approval of it waits after one."""


def postgres(store: SessionStore) -> PostgresStore | None:
    """``store`` when it is the PostgreSQL store (its module is loaded only then)."""
    module = sys.modules.get("openheim.store.postgres")
    return store if module is not None and isinstance(store, module.PostgresStore) else None


class Relay:
    """The listener of one replica; see the module docstring."""

    def __init__(self, hub: Hub, store: PostgresStore) -> None:
        self.hub = hub
        self.store = store
        self.connected = asyncio.Event()
        """Set while the listener is connected (tests and the health route wait on it)."""
        self._task: asyncio.Task[None] | None = None
        self.origin = uuid.uuid4().hex
        """This replica's name in its control messages: its own copies are ignored."""
        self.on_busy: Callable[[str, bool], None] | None = None
        """Told when a prompt begins (True) or ends (False) on another replica."""
        self.follower = Follower(hub)
        self._notices: ThreadPoolExecutor | None = None
        """The thread that sends busy changes (``share_busy``)."""

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def aclose(self) -> None:
        """Stop listening, and forwarding frames."""
        for task in (self._task, self.follower.task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self.follower.task = None
        if self._notices is not None:  # busy marks still unsent are a display: dropped
            self._notices.shutdown(wait=False, cancel_futures=True)
            self._notices = None

    def send(self, message: dict[str, Any]) -> None:
        """Publish a control message to every replica (this one's own copy is ignored)."""
        payload = json.dumps({**message, "origin": self.origin})
        if len(payload) > MAX_PAYLOAD:
            raise ValueError(f"a control message of {len(payload)} bytes is too long")
        self.store.notify(payload)

    async def _run(self) -> None:
        """Listen, and connect again whenever the connection drops."""
        import psycopg

        from openheim.errors import OpenheimError
        from openheim.store.postgres import CONTROL_CHANNEL, FRAMES_CHANNEL

        delay = RETRY_MIN
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.store.url, autocommit=True, connect_timeout=10
                )
                async with conn:
                    await conn.execute(f"LISTEN {FRAMES_CHANNEL}")
                    await conn.execute(f"LISTEN {CONTROL_CHANNEL}")
                    self.connected.set()
                    delay = RETRY_MIN
                    for key, live in list(self.hub.sessions.items()):
                        if live.writer is not None:  # what was stored while no one listened
                            self.follower.notice(key, ANY)
                    async for note in conn.notifies():
                        self._take(note.channel == FRAMES_CHANNEL, note.payload)
            except (psycopg.Error, OSError, OpenheimError) as err:  # the store's own reads too
                self.connected.clear()
                line = redact((str(err).strip().splitlines() or [type(err).__name__])[0])
                log.warning("the replicas' listener lost PostgreSQL (%s); connecting again", line)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    def share_busy(self, session_id: str, busy: bool) -> None:
        """Tell the other replicas that a prompt here began or ended, from a thread of the
        relay's own (in order: a prompt's start never waits on PostgreSQL on the event loop;
        a lost notice is logged: their clients' busy marks are a display, the lease still
        refuses a second prompt)."""
        if self._notices is None:
            self._notices = ThreadPoolExecutor(1, thread_name_prefix="openheim-relay")
        self._notices.submit(self._tell_busy, {"kind": "busy", "session": session_id, "busy": busy})

    def _tell_busy(self, message: dict[str, Any]) -> None:
        try:
            self.send(message)
        except Exception as err:
            log.warning("the replicas were not told of a busy change (%s)", type(err).__name__)

    def _take(self, frames: bool, payload: str) -> None:
        """One notification: frames stored, or a control message."""
        try:
            if frames:
                for session_id, seq in stored(payload):
                    self.follower.notice(session_id, seq)
            else:
                message = json.loads(payload)
                if isinstance(message, dict) and message.get("origin") != self.origin:
                    self._control(message)
        except Exception:  # one bad notification must not end the listener
            log.exception("a replica notification could not be handled")

    def _control(self, message: dict[str, Any]) -> None:
        """A control message of another replica: a busy change, or for a prompt that may run
        here."""
        if message.get("kind") == "busy":
            if self.on_busy is not None:
                self.on_busy(str(message.get("session")), message.get("busy") is True)
            return
        live = self.hub.get(str(message.get("session")))
        if live is None or not live.busy:
            return
        if message.get("kind") == "cancel":
            live.cancel()
        elif message.get("kind") == "answer":
            with contextlib.suppress(ValueError):
                choice = approvals.choice_named(str(message.get("choice")))
                live.answer(str(message.get("approval_id")), choice, str(message.get("reason")))


def cancel(hub: Hub, live: Live) -> None:
    """Cancel the prompt of ``live``, wherever it runs."""
    if not live.busy and live.writer is not None:
        cancel_elsewhere(hub, live.key)
    live.cancel()


def cancel_elsewhere(hub: Hub, session_id: str) -> None:
    """Ask the other replicas to cancel the prompt of ``session_id`` (one runs it, if any)."""
    if hub.relay is not None:
        hub.relay.send({"kind": "cancel", "session": session_id})


def answer(hub: Hub, live: Live, approval_id: str, choice: approvals.Choice, reason: str) -> bool:
    """Answer an approval of ``live``'s prompt, wherever it runs; False when none waits here
    and no other replica runs a prompt of the session."""
    if live.answer(approval_id, choice, reason):
        return True
    if live.busy or hub.relay is None or not hub.store.held_elsewhere(live.key):
        return False
    message = {"approval_id": approval_id, "choice": choice.id, "reason": reason}
    hub.relay.send({"kind": "answer", "session": live.key, **message})
    return True


def runs_elsewhere(hub: Hub, live: Live) -> bool:
    """Whether a prompt of ``live``'s stored session runs on another replica now."""
    return (
        not live.busy
        and hub.relay is not None
        and live.writer is not None
        and hub.store.held_elsewhere(live.key)
    )


def asked_elsewhere(hub: Hub, live: Live, after: int) -> list[str]:
    """The approval requests numbered up to ``after`` that a prompt on another replica still
    waits on, as stored: a client attaching here past them is sent them again, as the replica
    running the prompt would (it answers them through ``answer``)."""
    if not runs_elsewhere(hub, live):
        return []
    waiting: dict[str, str] = {}
    for seq, text in hub.store.frames.after(live.key, 0):
        if not text.startswith('{"type": "approval_') and not any(
            f'"{end}"' in text for end in TURN_ENDS
        ):
            continue  # most frames are deltas: not parsed
        data = json.loads(text)
        kind = data.get("type")
        if kind == "approval_request" and seq <= after:
            waiting[str(data.get("approval_id"))] = text
        elif kind == "approval_resolved":
            waiting.pop(str(data.get("approval_id")), None)
        elif kind == "event" and data.get("event", {}).get("type") in TURN_ENDS:
            waiting.clear()  # an earlier prompt's requests (cancelled ones are never resolved)
    return list(waiting.values())
