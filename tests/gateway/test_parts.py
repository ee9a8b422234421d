"""Parts of the gateway on their own: retries of platform calls, the fixed-window rate limit,
the passphrase and the inbox."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from openheim.errors import PlatformError
from openheim.gateway.auth import Authoriser
from openheim.gateway.http import request_with_retry
from openheim.gateway.inbound import Inbound
from openheim.gateway.ratelimit import RateLimiter, Verdict
from openheim.gateway.state import GatewayState

URL = "http://127.0.0.1:9/bot123:secret/sendMessage"


async def _calls(responses: list[httpx.Response], attempts: int = 6) -> tuple[int, list[float]]:
    waits: list[float] = []
    queue = list(responses)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def send() -> httpx.Response:
        return queue.pop(0)

    response = await request_with_retry("test call", send, attempts=attempts, sleep=sleep)
    return response.status_code, waits


async def test_each_platforms_retry_after_is_honoured() -> None:
    responses = [
        httpx.Response(429, json={"retry_after": 0.25, "global": False}),  # Discord
        httpx.Response(429, json={"ok": False, "parameters": {"retry_after": 3}}),  # Telegram
        httpx.Response(429, headers={"Retry-After": "7"}),  # WhatsApp's Graph, HTTP
        httpx.Response(503),
        httpx.Response(200, json={"ok": True}),
    ]
    assert await _calls(responses) == (200, [0.25, 3.0, 7.0, 4.0])


async def test_retries_end_with_one_line_that_names_no_url() -> None:
    with pytest.raises(PlatformError) as raised:
        await _calls([httpx.Response(502)] * 3, attempts=3)
    assert str(raised.value) == "test call failed after 3 tries: server error (502)"


async def test_a_client_error_is_returned_at_once() -> None:
    assert await _calls([httpx.Response(400)]) == (400, [])


async def test_the_rate_limit_counts_in_fixed_windows(tmp_path: Path) -> None:
    now = [1000.0]
    state = GatewayState(tmp_path / "gateway.db")
    limiter = RateLimiter(state, limit=2, window=60, clock=lambda: now[0])
    verdicts = [await limiter.check("telegram", "1") for _ in range(4)]
    assert verdicts[:2] == [Verdict(True), Verdict(True)]
    assert verdicts[2] == Verdict(False, 20.0, True) and verdicts[3] == Verdict(False, 20.0, False)
    assert (await limiter.check("telegram", "2")).allowed  # per sender
    now[0] = 1020.0  # the next window (1020 to 1080)
    assert (await limiter.check("telegram", "1")).allowed


async def test_the_passphrase_must_match_whole(tmp_path: Path) -> None:
    state = GatewayState(tmp_path / "gateway.db")
    auth = Authoriser({"telegram": frozenset({"1"})}, "open sesame", state)
    assert await auth.admitted("telegram", "1") and not await auth.admitted("discord", "1")
    for wrong in ("open", "open sesame!", "", "OPEN SESAME"):
        assert not await auth.try_passphrase("telegram", "2", wrong)
    assert await auth.try_passphrase("telegram", "2", " open sesame ")
    assert await auth.admitted("telegram", "2") and not await auth.admitted("whatsapp", "2")
    assert not await Authoriser({}, None, state).try_passphrase("telegram", "3", "")


def test_the_inbox_knows_a_handled_id_across_a_restart(tmp_path: Path) -> None:
    state = GatewayState(tmp_path / "gateway.db")
    message = Inbound("whatsapp", "wamid.1", "155", "155", "private words", "wamid.1")
    assert state.receive(message) and not state.receive(message)
    assert state.unhandled("whatsapp") == [message]
    state.handled(message)
    assert state.unhandled("whatsapp") == [] and not state.receive(message)
    state.close()
    again = GatewayState(tmp_path / "gateway.db")
    assert not again.receive(message)  # still a duplicate after a restart
