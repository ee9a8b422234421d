"""``Relay``: what replicas sharing a PostgreSQL store tell each other, over ``LISTEN/NOTIFY``.

Every batch of frames stored names its session and its highest number on the frames channel
(``store.postgres.FRAMES_CHANNEL``, sent on commit). A replica whose clients are attached to
a session that a prompt on another replica runs reads those frames from the store's frame log
and forwards them in order (``Hub.relayed``). Approval answers and cancels sent to a replica
that does not run the prompt go out on the control channel, and the replica that runs it
applies them (``Hub.controlled``).

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
from typing import TYPE_CHECKING, Any

from openheim.redaction.secrets import redact
from openheim.runtime import approvals

if TYPE_CHECKING:
    from openheim.server.hub import Hub, Live
    from openheim.store import SessionStore
    from openheim.store.postgres import PostgresStore

log = logging.getLogger(__name__)

RETRY_MIN = 0.1
RETRY_MAX = 2.0
"""Seconds between two tries to connect the listener again (doubling from ``RETRY_MIN``)."""
MAX_PAYLOAD = 7000
"""Bytes of a control message at most (PostgreSQL takes 8000 per ``NOTIFY``)."""


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

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def send(self, message: dict[str, Any]) -> None:
        """Publish a control message to every replica (this one's own copy is ignored)."""
        payload = json.dumps(message)
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
                    self.hub.catch_up()  # what was stored while no one listened
                    async for note in conn.notifies():
                        self._take(note.channel == FRAMES_CHANNEL, note.payload)
            except (psycopg.Error, OSError, OpenheimError) as err:  # the store's own reads too
                self.connected.clear()
                line = redact((str(err).strip().splitlines() or [type(err).__name__])[0])
                log.warning("the replicas' listener lost PostgreSQL (%s); connecting again", line)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    def _take(self, frames: bool, payload: str) -> None:
        """One notification: frames stored, or a control message."""
        try:
            if frames:
                seq, _, session_id = payload.partition(" ")
                self.hub.relayed(session_id, int(seq))
            else:
                message = json.loads(payload)
                if isinstance(message, dict):
                    self._control(message)
        except Exception:  # one bad notification must not end the listener
            log.exception("a replica notification could not be handled")

    def _control(self, message: dict[str, Any]) -> None:
        """A control message of another replica for a prompt that may run here."""
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
    if not live.busy and hub.relay is not None and live.writer is not None:
        hub.relay.send({"kind": "cancel", "session": live.key})
    live.cancel()


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
