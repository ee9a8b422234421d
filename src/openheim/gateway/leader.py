"""Exactly one gateway process polls each platform: the one holding its leader lease.

Gateways on several replicas share one state (``store_url``); each tries for a platform's lease
every third of its length and polls only while it holds it, renewing it as often. A leader that
dies stops renewing, and its lease expires within ``lease`` seconds (default 10): another
replica takes it, handles the messages the dead one stored but did not answer, and polls from
the shared offset. A lease held by a process of this host that is gone (a gateway killed and
started again on one machine) is taken at once. Messages pushed by webhooks reach every
replica; the shared inbox keeps each message id to one handling.

A lease is named by the platform and the bot (``lease_name``): two bots of one platform sharing
a store each have a leader. The state's calls run off the event loop (``GatewayState.off_loop``):
a database that is slow or unreachable holds the state's worker thread, never the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable

from openheim.errors import StoreError
from openheim.gateway.state import GatewayState
from openheim.store.lease import pid_alive, process_started, this_host

log = logging.getLogger(__name__)

DEFAULT_LEASE = 10.0
"""Seconds a platform's leader lease lasts without renewal (``gateway.leader_lease_secs``)."""


def holder_id() -> str:
    """This process's name in the lease table: host, pid, the pid's start (pids are reused)
    and a random part, ``/``-separated."""
    pid = os.getpid()
    return f"{this_host()}/{pid}/{process_started(pid) or ''}/{uuid.uuid4().hex[:8]}"


def gone(holder: str) -> bool:
    """Whether ``holder`` was a process of this host that no longer runs (or whose pid now
    names another process); a holder on another host is never known gone (its lease expires)."""
    host, pid, started, _ = [*holder.split("/"), "", "", ""][:4]
    if host != this_host() or not pid.isdigit():
        return False
    if not pid_alive(int(pid)):
        return True
    now = process_started(int(pid))
    return bool(started) and now is not None and now != started


def lease_name(platform: str, bot: str) -> str:
    """The lease's name for ``bot`` (a non-secret identity, see ``Platform.bot_id``) on
    ``platform``: one leader per bot, not per platform."""
    return f"{platform}/{bot}"


class Leadership:
    """The lease of one platform's bot, taken and renewed through ``state``."""

    def __init__(
        self, state: GatewayState, platform: str, bot: str, lease: float = DEFAULT_LEASE
    ) -> None:
        self._state = state
        self._platform = platform  # what the log lines say
        self._name = lease_name(platform, bot)
        self._lease = lease
        self._holder = holder_id()

    @property
    def interval(self) -> float:
        """Seconds between two tries or renewals: a third of the lease, so a slow round trip
        or two does not lose it."""
        return self._lease / 3

    async def run(
        self, poll: Callable[[], Awaitable[None]], on_lead: Callable[[], Awaitable[object]]
    ) -> None:
        """Poll (``poll()``) while this process leads, until cancelled; ``on_lead`` runs each
        time it becomes leader (before polling). A failure of ``poll`` ends this with it, as
        does the database's (then the lease is left to expire)."""
        failed = False
        try:
            while True:
                await self._until_leading()
                log.info("%s: this gateway leads and polls", self._platform)
                await on_lead()
                await self._poll_while_leading(poll)
                log.warning("%s: lost the leader lease; another gateway polls now", self._platform)
        except StoreError:
            failed = True
            raise
        finally:  # on a clean stop, another replica takes over at once
            if not failed:
                with contextlib.suppress(StoreError):  # the lease expires; the error stays
                    await self._state.off_loop(self._state.resign, self._name, self._holder)

    async def _try(self) -> bool:
        """Take or renew the lease, in a worker thread."""
        return await self._state.off_loop(self._take)

    def _take(self) -> bool:
        """Take or renew the lease; a holder here that is gone is replaced at once."""
        if self._state.lead(self._name, self._holder, self._lease):
            return True
        holder = self._state.leader(self._name)
        return (
            holder is not None
            and gone(holder)
            and self._state.take_over(self._name, holder, self._holder, self._lease)
        )

    async def _until_leading(self) -> None:
        waiting = False
        while not await self._try():
            if not waiting:
                log.info("%s: another gateway polls; standing by", self._platform)
                waiting = True
            await asyncio.sleep(self.interval)

    async def _poll_while_leading(self, poll: Callable[[], Awaitable[None]]) -> None:
        """Run ``poll`` until the lease is lost (then cancel it); a ``poll`` that returns (a
        webhook platform) leaves the lease held and renewed."""
        task = asyncio.ensure_future(poll())
        try:
            while True:
                if task.done():  # returned: wait the interval here, not in a busy loop
                    await asyncio.sleep(self.interval)
                else:
                    await asyncio.wait({task}, timeout=self.interval)
                if task.done():
                    task.result()  # the platform's failure ends the leadership
                if not await self._try():
                    return
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
