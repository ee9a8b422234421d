"""The sessions of one runtime share one HTTP client per endpoint: lent to each session's
provider, given back when it closes, closed by the last; keys and cookies never cross."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import httpx
import pytest

from openheim import providers
from openheim.api import Runtime, Session
from openheim.events import Finished, TextDelta
from openheim.providers.base import ProviderSettings
from openheim.providers.http_base import HTTPProvider
from openheim.providers.transport import AsyncioTransport
from openheim.runtime.clients import ClientPool
from openheim.runtime.options import SessionOptions
from openheim.testing import FakeLLMServer, FakeReply

KEY_A, KEY_B = "key-a-0123456789", "key-b-9876543210"


def configure(home: Path, server: FakeLLMServer) -> None:
    """Two providers on ``server`` with different keys; ``a`` is the default."""
    base = server.base_url
    (home / "config.toml").write_text(
        f'default_provider = "a"\napproval = "auto"\n'
        f'[providers.a]\nkind = "openai_compatible"\napi_base = "{base}"\n'
        f'api_key = "{KEY_A}"\ndefault_model = "m"\n'
        f'[providers.b]\nkind = "openai_compatible"\napi_base = "{base}"\n'
        f'api_key = "{KEY_B}"\ndefault_model = "m"\n'
    )


def client_of(session: Session) -> httpx.AsyncClient:
    """The HTTP client of the session's provider (under its wrappers)."""
    provider: object = session.agent.provider
    while hasattr(provider, "inner"):
        provider = provider.inner
    assert isinstance(provider, HTTPProvider)
    return provider._client


def closed(client: httpx.AsyncClient) -> bool:
    """``client.is_closed`` (a call, so that mypy does not narrow the property)."""
    return client.is_closed


async def answer(session: Session, text: str) -> str:
    """The text of the reply to ``text``, within a deadline."""
    result = await asyncio.wait_for(session.prompt(text), timeout=10)
    return result.text


async def test_sessions_share_one_client_closed_by_the_last(home: Path, work: Path) -> None:
    with FakeLLMServer(default=FakeReply(text="pong")) as server:
        configure(home, server)
        runtime = Runtime.from_config(cwd=work)
        first, second = await runtime.new_session(), await runtime.new_session()
        client = client_of(first)
        assert client_of(second) is client
        assert runtime.shared.clients.open_clients == 1
        await first.close()
        assert not closed(client)
        assert await answer(second, "still there?") == "pong"
        await second.close()
        assert closed(client)
        assert runtime.shared.clients.open_clients == 0
        await runtime.aclose()


async def test_a_prompt_reuses_the_connection_another_session_left(home: Path, work: Path) -> None:
    with FakeLLMServer(default=FakeReply(text="pong")) as server:
        configure(home, server)
        async with Runtime.from_config(cwd=work) as runtime:
            first, second = await runtime.new_session(), await runtime.new_session()
            transport = cast("AsyncioTransport", client_of(first)._transport)
            await answer(first, "one")
            (idle,) = [c for pool in transport._idle.values() for _, c in pool]
            await answer(second, "two")
            assert [c for pool in transport._idle.values() for _, c in pool] == [idle]


async def test_closing_a_session_does_not_cut_anothers_stream(home: Path, work: Path) -> None:
    pieces = [f"piece{i} " for i in range(20)]
    with FakeLLMServer(default=FakeReply(chunks=pieces, chunk_delay=0.01)) as server:
        configure(home, server)
        async with Runtime.from_config(cwd=work) as runtime:
            leaving, streaming = await runtime.new_session(), await runtime.new_session()
            got: list[str] = []
            async with asyncio.timeout(10):
                async for event in streaming.prompt("stream"):
                    if isinstance(event, TextDelta):
                        if not got:
                            await leaving.close()
                        got.append(event.text)
                    last = event
            assert isinstance(last, Finished) and last.stop_reason == "end_turn"
            assert "".join(got) == "".join(pieces)
            assert not client_of(streaming).is_closed


async def test_providers_with_different_keys_see_neither_key_nor_cookie(
    home: Path, work: Path
) -> None:
    cookie = {"Set-Cookie": "session=from-a; Path=/"}
    with FakeLLMServer(default=FakeReply(text="pong", headers=cookie)) as server:
        configure(home, server)
        async with Runtime.from_config(cwd=work) as runtime:
            a = await runtime.new_session()
            async with runtime.open_session(SessionOptions(provider="b")) as b:
                assert client_of(a) is client_of(b)
                for session in (a, b, a, b):
                    await answer(session, "hello")
        sent = [(r.headers.get("authorization"), r.headers.get("cookie")) for r in server.requests]
    bearer_a, bearer_b = f"Bearer {KEY_A}", f"Bearer {KEY_B}"
    assert sent == [(bearer_a, None), (bearer_b, None), (bearer_a, None), (bearer_b, None)]


async def test_closing_the_runtime_closes_its_clients(home: Path, work: Path) -> None:
    with FakeLLMServer(default=FakeReply(text="pong")) as server:
        configure(home, server)
        runtime = Runtime.from_config(cwd=work)
        session = await runtime.new_session()
        client = client_of(session)
        await runtime.aclose()
        assert closed(client)
        assert runtime.shared.clients.open_clients == 0


def test_each_event_loop_gets_its_own_client() -> None:
    pool = ClientPool()
    settings = ProviderSettings(
        name="a", kind="openai", model="m", api_base="http://127.0.0.1:9/v1", api_key=KEY_A
    )

    async def borrow_twice() -> httpx.AsyncClient:
        client = pool.borrow(settings)
        assert pool.borrow(settings) is client
        return client

    first, second = asyncio.run(borrow_twice()), asyncio.run(borrow_twice())
    assert first is not second


async def test_a_client_not_lent_is_left_alone() -> None:
    pool = ClientPool()
    async with httpx.AsyncClient() as stranger:
        await pool.give_back(stranger)
        assert not stranger.is_closed


def test_only_openheims_own_http_adapters_take_a_shared_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert providers.takes_shared_client("openai")
    assert not providers.takes_shared_client("llama_server")
    assert not providers.takes_shared_client("claude_cli")
    monkeypatch.setitem(providers._FACTORIES, "openai", lambda settings, client: object())
    assert not providers.takes_shared_client("openai")
