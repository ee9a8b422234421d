"""The gateway's PostgreSQL state never holds the event loop: while a statement waits on the
database (here on a lock another connection holds), the loop goes on serving; and the leader
lease is kept per bot, so two bots of one platform sharing a store each poll."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, cast

import psycopg
import pytest

from openheim.gateway.auth import Authoriser
from openheim.gateway.discord import Discord
from openheim.gateway.inbound import Inbound
from openheim.gateway.leader import Leadership
from openheim.gateway.pg_state import PgGatewayState
from openheim.gateway.pipeline import Gateway
from openheim.gateway.ratelimit import RateLimiter
from openheim.gateway.telegram import Telegram
from openheim.gateway.whatsapp import WhatsApp
from openheim.runtime import Runtime
from tests.gateway.loopback import WAIT
from tests.gateway.test_hostile_senders import _Sink

LEASE = 0.6
TOKEN_SECRET = "AAH-very-secret-part"


class Poller:
    """A platform's receive loop that says when it polls."""

    def __init__(self) -> None:
        self.polling = asyncio.Event()

    async def poll(self) -> None:
        self.polling.set()
        await asyncio.Event().wait()

    async def on_lead(self) -> None:
        """Nothing to resume."""


@pytest.fixture
def state(pg_url: str) -> Iterator[PgGatewayState]:
    opened = PgGatewayState(pg_url)
    try:
        yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def locked(url: str, table: str) -> Iterator[threading.Event]:
    """``table`` locked by another connection until the returned event is set, or ``WAIT``
    seconds at most (so a gateway that held the loop while waiting is let go, and fails)."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        with psycopg.connect(url) as conn:
            conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            holding.set()
            release.wait(WAIT)
            conn.rollback()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert holding.wait(WAIT)
    try:
        yield release
    finally:
        release.set()
        thread.join(WAIT)


def waiting_on_lock(url: str, table: str) -> bool:
    """Whether some session waits on a lock in a statement on ``table``."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE %s",
            (f"%{table}%",),
        ).fetchone()
    return bool(row and row[0])


async def until_waiting(url: str, table: str, release: threading.Event) -> None:
    """Poll from the event loop until the gateway's statement waits on the lock: reached only
    if the loop runs meanwhile, and checked to be before the lock was let go."""
    async with asyncio.timeout(WAIT):
        while not await asyncio.to_thread(waiting_on_lock, url, table):
            await asyncio.sleep(0.02)
    assert not release.is_set()  # still held: the loop ran while the gateway waited


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, object]) -> AsyncIterator[asyncio.Task[object]]:
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _leading(state: PgGatewayState, poller: Poller) -> Coroutine[Any, Any, object]:
    return Leadership(state, "telegram", "111", LEASE).run(poller.poll, poller.on_lead)


MESSAGE = Inbound("telegram", "1", "8", "8", "hello", private=True)
"""From a sender not admitted, to a gateway with no passphrase: stored, then handled unanswered."""


def _delivering(state: PgGatewayState) -> Coroutine[Any, Any, object]:
    auth = Authoriser({"telegram": frozenset({"7"})}, None, state)
    gateway = Gateway(
        cast(Runtime, None), state, auth, RateLimiter(state, 100, 60), {"telegram": _Sink()}
    )
    return gateway.deliver(MESSAGE)


async def test_the_leader_lease_waits_off_the_event_loop(
    state: PgGatewayState, pg_url: str
) -> None:
    poller = Poller()
    with locked(pg_url, "gateway_leaders") as release:
        async with background(_leading(state, poller)):
            await until_waiting(pg_url, "gateway_leaders", release)
            assert not poller.polling.is_set()
            release.set()
            await asyncio.wait_for(poller.polling.wait(), WAIT)


async def test_a_delivery_waits_off_the_event_loop(state: PgGatewayState, pg_url: str) -> None:
    with locked(pg_url, "gateway_inbox") as release:
        async with background(_delivering(state)) as delivered:
            await until_waiting(pg_url, "gateway_inbox", release)
            assert not delivered.done()
            release.set()
            await asyncio.wait_for(delivered, WAIT)
            async with asyncio.timeout(WAIT):  # handled in a task of its own
                while await asyncio.to_thread(state.unhandled, "telegram"):
                    await asyncio.sleep(0.02)
    assert not state.receive(MESSAGE)  # it was stored: a second delivery is a duplicate


async def test_calls_waiting_on_the_database_leave_the_shared_threads_free(
    state: PgGatewayState, pg_url: str
) -> None:
    """More waiting calls than the default executor has threads: the process's other
    ``to_thread`` work (tools, file reads) still runs meanwhile."""

    async def ask() -> list[bool]:
        return await asyncio.gather(
            *(state.off_loop(state.granted, "telegram", str(n)) for n in range(40))
        )

    with locked(pg_url, "gateway_grants") as release:
        async with background(ask()) as waiting:
            await until_waiting(pg_url, "gateway_grants", release)
            assert await asyncio.wait_for(asyncio.to_thread(sum, [1, 2]), WAIT) == 3
            assert not release.is_set() and not waiting.done()
            release.set()
            assert await asyncio.wait_for(waiting, WAIT) == [False] * 40


@pytest.mark.parametrize(
    ("first", "second", "both_poll"),
    [("111", "222", True), ("111", "111", False)],
    ids=["two-bots", "one-bot-twice"],
)
async def test_each_bot_of_a_platform_has_its_own_leader(
    pg_url: str, first: str, second: str, both_poll: bool
) -> None:
    states = [PgGatewayState(pg_url), PgGatewayState(pg_url)]
    pollers = [Poller(), Poller()]
    runs = [
        Leadership(s, "telegram", bot, LEASE).run(p.poll, p.on_lead)
        for s, bot, p in zip(states, (first, second), pollers, strict=True)
    ]
    try:
        async with background(runs[0]), background(runs[1]):
            expected = 2 if both_poll else 1
            async with asyncio.timeout(WAIT):
                while sum(p.polling.is_set() for p in pollers) < expected:
                    await asyncio.sleep(0.02)
            await asyncio.sleep(LEASE * 2)  # two lease lengths: the leaders renewed meanwhile
            assert sum(p.polling.is_set() for p in pollers) == expected
    finally:
        for opened in states:
            opened.close()


def _telegram(token: str) -> str:
    return Telegram(token, cast(PgGatewayState, None)).bot_id


def _discord(token: str) -> str:
    return Discord(token).bot_id


def _whatsapp(token: str) -> str:
    return WhatsApp(token, "app-secret", "verify", "15550001111").bot_id


@pytest.mark.parametrize(
    ("make", "token", "bot"),
    [
        (_telegram, f"123456:{TOKEN_SECRET}", "123456"),
        (_telegram, TOKEN_SECRET, "sha256-"),
        (_telegram, f"../1:{TOKEN_SECRET}", "sha256-"),
        (_discord, f"MTIz.{TOKEN_SECRET}", "sha256-"),
        (_whatsapp, TOKEN_SECRET, "15550001111"),
    ],
    ids=["telegram", "telegram-odd-token", "telegram-odd-prefix", "discord", "whatsapp"],
)
async def test_a_bot_is_named_without_its_token(
    make: Callable[[str], str], token: str, bot: str
) -> None:
    found = make(token)
    assert TOKEN_SECRET not in found
    assert found == bot if bot != "sha256-" else found.startswith(bot) and len(found) == 23
    assert make(token) == found  # every replica names the bot alike
