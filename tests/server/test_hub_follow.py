"""``Live.follow`` and ``server.follower``: frames another replica stored reach every attached
client once, in order, whether a client was attached before they came or attaches while they are
not yet relayed, and after a read that failed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg

from openheim.config.load import Overrides, load_settings
from openheim.runtime import Runtime, SessionOptions
from openheim.server.hub import Hub
from openheim.testing import FakeLLMServer
from tests.server.support import WAIT, write_config


class Client:
    """An attached client: the numbers of the frames it got, replayed or pushed."""

    def __init__(self) -> None:
        self.got: list[int] = []

    def push(self, frame: str) -> None:
        self.got.append(json.loads(frame)["seq"])

    def replay(self, frames: list[str]) -> None:
        for frame in frames:
            self.push(frame)


@contextlib.asynccontextmanager
async def pg_hub(home: Path, work: Path, url: str) -> AsyncIterator[Hub]:
    """A hub on the PostgreSQL store ``url``, its listener not started: the test relays."""
    with FakeLLMServer() as llm:
        write_config(home, llm, f'store_url = "{url}"')
        env = {"OPENHEIM_HOME": str(home)}
        settings = load_settings(Overrides(work_dir=str(work)), cwd=work, env=env)
        runtime = Runtime(settings=settings)
        store = runtime.shared.borrow_store(settings.data_dir, settings.store_url)
        hub = Hub(runtime, store)
        try:
            yield hub
        finally:
            await hub.close_all()
            runtime.shared.give_back(store)


def stored_elsewhere(hub: Hub, key: str, numbers: range) -> None:
    """Frames of ``key`` as another replica's prompt stores them."""
    frame = '{{"type": "event", "session_id": "{}", "seq": {}}}'
    hub.store.frames.append([(key, n, frame.format(key, n)) for n in numbers])


def notice(hub: Hub, key: str, seq: int) -> None:
    """A ``NOTIFY`` of frames stored by another replica, as the listener takes it."""
    assert hub.relay is not None
    hub.relay.follower.notice(key, seq)


async def settled(hub: Hub) -> None:
    assert hub.relay is not None
    async with asyncio.timeout(WAIT):
        await hub.relay.follower.settled()


async def test_a_client_attaching_before_the_relay_gets_each_frame_once(
    home: Path, work: Path, pg_url: str
) -> None:
    async with pg_hub(home, work, pg_url) as hub:
        live = await hub.open(SessionOptions())
        early, late = Client(), Client()
        live.subscribers.add(early)
        stored_elsewhere(hub, live.key, range(1, 4))
        late.replay([text for _, text in live.since(0)])  # as the agent channel attaches
        live.subscribers.add(late)
        stored_elsewhere(hub, live.key, range(4, 6))
        notice(hub, live.key, 3)  # the notices arrive late, and out of date
        notice(hub, live.key, 5)
        notice(hub, live.key, 5)
        await settled(hub)
    assert early.got == late.got == [1, 2, 3, 4, 5]
    assert live.seq == 5


async def test_frames_relayed_while_no_one_is_attached_only_move_the_numbering(
    home: Path, work: Path, pg_url: str
) -> None:
    async with pg_hub(home, work, pg_url) as hub:
        live = await hub.open(SessionOptions())
        stored_elsewhere(hub, live.key, range(1, 8))
        notice(hub, live.key, 7)
        await settled(hub)
        client = Client()
        client.replay([text for _, text in live.since(5)])
    assert live.seq == 7 and live.stale
    assert client.got == [6, 7]


class Failures(logging.Handler):
    """Set once the follower says a read failed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "were not read" in record.getMessage():
            self.seen.set()


async def test_frames_a_failed_read_missed_come_with_no_further_notice(
    home: Path, work: Path, pg_url: str
) -> None:
    """The last notice of a turn came while PostgreSQL could not answer: its frames are read
    again until it can, though no later notice ever comes."""
    failures = Failures()
    logging.getLogger("openheim.server.follower").addHandler(failures)
    try:
        async with pg_hub(home, work, pg_url) as hub:
            live = await hub.open(SessionOptions())
            client = Client()
            live.subscribers.add(client)
            stored_elsewhere(hub, live.key, range(1, 5))
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("ALTER TABLE session_frames RENAME TO frames_away")
                notice(hub, live.key, 4)
                async with asyncio.timeout(WAIT):
                    await failures.seen.wait()
                assert client.got == []
                admin.execute("ALTER TABLE frames_away RENAME TO session_frames")
            await settled(hub)
    finally:
        logging.getLogger("openheim.server.follower").removeHandler(failures)
    assert client.got == [1, 2, 3, 4] and live.seq == 4
