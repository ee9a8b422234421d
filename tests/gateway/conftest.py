"""The fake Telegram Bot API that most gateway tests talk to, and the fake Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.gateway.fake_discord import FakeDiscord
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.loopback import serving


@pytest.fixture
async def telegram() -> AsyncIterator[tuple[FakeTelegram, str]]:
    """A fake Bot API on loopback, and its base URL."""
    fake = FakeTelegram()
    async with serving(fake.app()) as url:
        yield fake, url


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    """A fake Discord (gateway WebSocket and REST) on loopback."""
    fake = FakeDiscord()
    async with serving(fake.app()) as url:
        fake.ws_url = url.replace("http://", "ws://") + "/gateway"
        yield fake
