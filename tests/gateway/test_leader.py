"""The leader lease in one process: of gateways sharing one state only the lease's holder
polls; a clean stop hands over at once, a leader that stops renewing is replaced within the
lease, and one that lost its lease stops polling."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from openheim.errors import PlatformError
from openheim.gateway.leader import Leadership, gone, lease_name
from openheim.gateway.state import GatewayState
from openheim.store.lease import process_started, this_host
from tests.gateway.loopback import WAIT

LEASE = 0.6
BOT = "123456"
NAME = lease_name("telegram", BOT)


class Poller:
    """A platform's receive loop that says when it polls and when it was stopped."""

    def __init__(self) -> None:
        self.polling = asyncio.Event()
        self.stopped = asyncio.Event()
        self.leads = 0

    async def poll(self) -> None:
        self.polling.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.polling.clear()
            self.stopped.set()

    async def on_lead(self) -> None:
        self.leads += 1


@contextlib.asynccontextmanager
async def leading(
    state: GatewayState, poller: Poller, poll: Callable[[], Awaitable[None]] | None = None
) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(
        Leadership(state, "telegram", BOT, LEASE).run(poll or poller.poll, poller.on_lead)
    )
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _states(tmp_path: Path) -> tuple[GatewayState, GatewayState]:
    return GatewayState(tmp_path / "gateway.db"), GatewayState(tmp_path / "gateway.db")


async def test_only_the_leader_polls_and_a_clean_stop_hands_over(tmp_path: Path) -> None:
    first_state, second_state = _states(tmp_path)
    first, second = Poller(), Poller()
    async with leading(first_state, first) as first_task:
        await asyncio.wait_for(first.polling.wait(), WAIT)
        async with leading(second_state, second):
            await asyncio.sleep(LEASE * 2)  # two lease lengths: the leader renewed meanwhile
            assert first.polling.is_set() and not second.polling.is_set()
            first_task.cancel()
            started = time.monotonic()
            await asyncio.wait_for(second.polling.wait(), WAIT)
            assert time.monotonic() - started < LEASE  # resigned: no wait for expiry
            assert (first.leads, second.leads) == (1, 1)


async def test_a_leader_that_stops_renewing_is_replaced_within_the_lease(tmp_path: Path) -> None:
    state, _ = _states(tmp_path)
    assert state.lead(NAME, "a process since killed", LEASE)
    started = time.monotonic()
    poller = Poller()
    async with leading(state, poller):
        await asyncio.wait_for(poller.polling.wait(), WAIT)
    assert LEASE * 0.9 <= time.monotonic() - started <= LEASE * 2  # expiry plus one try


async def test_a_leader_that_lost_its_lease_stops_polling(tmp_path: Path) -> None:
    state, other = _states(tmp_path)
    poller = Poller()
    async with leading(state, poller):
        await asyncio.wait_for(poller.polling.wait(), WAIT)
        other._exec("UPDATE leaders SET holder = 'another', expires = expires + 3600")
        await asyncio.wait_for(poller.stopped.wait(), WAIT)
        assert not poller.polling.is_set()


async def test_a_failing_platform_ends_the_leadership_with_its_error(tmp_path: Path) -> None:
    state, other = _states(tmp_path)

    async def refused() -> None:
        raise PlatformError("Telegram: the bot token was refused (HTTP 401)", hint="check it")

    async with leading(state, Poller(), refused) as task:
        with pytest.raises(PlatformError):
            await asyncio.wait_for(task, WAIT)
    assert other.lead(NAME, "another", LEASE)  # resigned on the way out


async def test_a_lease_left_by_a_dead_process_of_this_host_is_taken_at_once(
    tmp_path: Path,
) -> None:
    state, _ = _states(tmp_path)
    dead = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await dead.wait()
    assert state.lead(NAME, f"{this_host()}/{dead.pid}//0000", 3600.0)
    poller = Poller()
    async with leading(state, poller):
        await asyncio.wait_for(poller.polling.wait(), LEASE)  # no wait for the hour


@pytest.mark.parametrize(
    ("holder", "is_gone"),
    [
        (f"{this_host()}/{os.getpid()}/{process_started(os.getpid())}/x", False),  # alive
        (f"{this_host()}/{os.getpid()}/another start/x", True),  # its pid reused
        (f"elsewhere/{os.getpid()}//x", False),  # another host: only expiry tells
        (f"{this_host()}/not-a-pid//x", False),
        ("garbage", False),
    ],
)
def test_who_is_known_gone(holder: str, is_gone: bool) -> None:
    assert gone(holder) is is_gone


class CountingState(GatewayState):
    """The state, counting the lease's renewals."""

    renewals = 0

    def lead(self, name: str, holder: str, ttl: float) -> bool:
        self.renewals += 1
        return super().lead(name, holder, ttl)


async def test_a_webhook_platform_keeps_the_lease_renewed_at_the_interval(
    tmp_path: Path,
) -> None:
    state = CountingState(tmp_path / "gateway.db")
    poller = Poller()

    async def webhook_only() -> None:  # as Telegram's receive with a webhook secret
        poller.polling.set()

    async with leading(state, poller, webhook_only):
        await asyncio.wait_for(poller.polling.wait(), WAIT)
        await asyncio.sleep(LEASE)  # three intervals
        assert not GatewayState(tmp_path / "gateway.db").lead(NAME, "other", LEASE)
    assert 2 <= state.renewals <= 6  # renewed, not in a busy loop
