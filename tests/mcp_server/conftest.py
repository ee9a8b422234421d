"""Fixtures for ``openheim mcp serve``: a home whose config points at ``FakeLLMServer``, a
work dir inside it, and an MCP client on a real ``python -m openheim mcp serve`` subprocess."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from openheim.testing import FakeLLMServer

ServeClient = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, fake: FakeLLMServer) -> Path:
    """OPENHEIM_HOME with the fake provider as its default."""
    path = tmp_path / "home"
    path.mkdir()
    (path / "config.toml").write_text(
        f'default_provider = "fake"\n[providers.fake]\napi_base = "{fake.base_url}"\n'
        'default_model = "fake-model"\n'
    )
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    (path / "sub").mkdir(parents=True)
    return path


@pytest.fixture
def serve(home: Path, work: Path) -> ServeClient:
    """Opens an MCP client on ``openheim mcp serve ARGS`` run in ``work``."""

    @asynccontextmanager
    async def open_client(*args: str) -> AsyncIterator[Client]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "openheim", "mcp", "serve", *args],
            env={**env, "OPENHEIM_HOME": str(home)},
            cwd=work,
        )
        async with Client(params) as client:
            yield client

    return open_client
