"""Which open sessions run a turn, told to the ``/ws`` clients that asked as it changes.

The web page marks busy sessions in its list, those it is attached to or not: a prompt that
begins calls ``started``, and the listeners (one per connection that sent ``watch_busy``) hear
``(session_id, True)`` then, and ``(session_id, False)`` once the prompt's task is done,
however it ended; with replicas, a change on another one is told as well (``tell``). Only
clients that ask are told: each change goes to every listener, which a
thousand sockets each running a session (the load benchmark) would pay for a thousand times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from openheim.server.live import Live

log = logging.getLogger(__name__)

Listener = Callable[[str, bool], None]
"""Told a session's id and whether a turn runs in it now."""


class BusyBoard:
    """The listeners to tell when a session's turn begins or ends."""

    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self.share: Listener | None = None
        """Also told of each change here (replicas: tells the others, ``relay.share_busy``)."""

    def started(self, live: Live) -> None:
        """``live`` has just begun a prompt: tell everyone now, and again when it is done."""
        task = live.task
        if task is None or task.done():
            return
        self._changed(live.key, True)
        task.add_done_callback(lambda _: self._changed(live.key, False))

    def _changed(self, key: str, busy: bool) -> None:
        self.tell(key, busy)
        if self.share is not None:
            self.share(key, busy)

    def tell(self, key: str, busy: bool) -> None:
        for listener in list(self.listeners):
            try:
                listener(key, busy)
            except Exception:  # one connection's failure must not hide the change from others
                log.debug("a busy listener failed", exc_info=True)
