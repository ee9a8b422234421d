"""``Live.start`` on a stored session reads the store in a worker thread: a second prompt that
comes while the first one's start waits for it is refused, as one that comes later is."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openheim.errors import SessionBusy
from openheim.messages import Message
from openheim.runtime import SessionOptions
from openheim.server.live import Live
from tests.server.test_hub_follow import pg_hub


def state(live: Live) -> tuple[bool, bool]:
    """Whether its start reads the store, and whether its prompt runs."""
    return live.starting, live.busy


async def test_two_prompts_starting_together_run_one(home: Path, work: Path, pg_url: str) -> None:
    async with pg_hub(home, work, pg_url) as hub:
        live = await hub.open(SessionOptions())
        first = asyncio.ensure_future(live.start(Message.user("one")))
        await asyncio.sleep(0)  # the first is reading the store now
        assert state(live) == (True, False)
        with pytest.raises(SessionBusy):
            await live.start(Message.user("two"))
        await first
        assert state(live) == (False, True)
        with pytest.raises(SessionBusy):
            await live.start(Message.user("three"))
        live.cancel()
