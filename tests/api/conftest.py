"""Fixtures for the library API tests: a scripted provider under a unique kind, runtimes built
from keyword arguments (closed after each test), and a tool that blocks until released."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openheim import providers
from openheim.api import Runtime
from openheim.providers.base import ModelRequest, ProviderSettings
from openheim.testing import ScriptedProvider
from openheim.tools.decorator import FunctionTool, tool

MODEL = "model-a"


@pytest.fixture(autouse=True)
def isolated_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``OPENHEIM_HOME`` is the test's ``home`` (``tests/conftest.py`` keeps every other
    ``OPENHEIM_*`` setting out)."""
    monkeypatch.setenv("OPENHEIM_HOME", str(home))
    return home


@dataclass
class Scripted:
    """A scripted provider registered under ``kind``; ``built`` holds every ProviderSettings
    the factory was called with."""

    kind: str
    provider: ScriptedProvider
    built: list[ProviderSettings] = field(default_factory=list)

    @property
    def requests(self) -> list[ModelRequest]:
        return self.provider.requests

    def tool_names(self, index: int = -1) -> list[str]:
        """The tool names offered in request ``index``."""
        return [spec.name for spec in self.provider.requests[index].tools]


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    """A ``ScriptedProvider`` registered under a kind of its own (the registry is global)."""
    kind = f"scripted-{uuid.uuid4().hex[:12]}"
    provider = ScriptedProvider(name=kind)
    out = Scripted(kind, provider)

    def factory(settings: ProviderSettings, client: object) -> ScriptedProvider:
        out.built.append(settings)
        return provider

    Runtime.register_provider(kind, factory)
    yield out
    providers._FACTORIES.pop(kind, None)


MakeRuntime = Callable[..., Runtime]


@pytest.fixture
async def make_runtime(scripted: Scripted, home: Path, work: Path) -> AsyncIterator[MakeRuntime]:
    """Build a ``Runtime`` on the scripted provider (data in ``home``, working in ``work``);
    keyword arguments replace the defaults. Every runtime is closed after the test."""
    made: list[Runtime] = []

    def make(**kw: Any) -> Runtime:
        args: dict[str, Any] = {
            "provider": scripted.kind,
            "model": MODEL,
            "data_dir": home,
            "work_dir": work,
        }
        runtime = Runtime(**{**args, **kw})
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.aclose()


@dataclass
class Blocker:
    """A read-only tool ``block`` that waits for ``release``; it records what happened."""

    tool: FunctionTool
    started: asyncio.Event
    release: asyncio.Event
    cancelled: list[str]
    finished: list[str]


@pytest.fixture
def blocker() -> Blocker:
    started, release = asyncio.Event(), asyncio.Event()
    cancelled: list[str] = []
    finished: list[str] = []

    @tool(read_only=True)
    async def block(label: str) -> str:
        """Wait until the test releases the call.

        Args:
            label: A name for this call.
        """
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(label)
            raise
        finished.append(label)
        return f"released {label}"

    return Blocker(block, started, release, cancelled, finished)
