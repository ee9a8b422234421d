"""Fixtures of the terminal UI tests: a FakeLLMServer the settings point at, and the app
built over them, driven with Textual's pilot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openheim.chat.history import history_for
from openheim.config.load import Overrides, Settings, load_settings
from openheim.runtime import SessionOptions
from openheim.testing import FakeLLMServer
from openheim.tui.app import ChatApp
from tests.tui.support import configure

MakeApp = Callable[..., ChatApp]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """The fake model; a test scripts its answers with ``server.add(...)``."""
    with FakeLLMServer([]) as fake:
        yield fake


def load(home: Path, work: Path, **overrides: str | None) -> Settings:
    env = {"OPENHEIM_HOME": str(home)}
    return load_settings(Overrides(**overrides), cwd=work, env=env)  # type: ignore[arg-type]


@pytest.fixture
def make_app(home: Path, work: Path, server: FakeLLMServer) -> MakeApp:
    """``make_app(approval="auto", first=None, options=None)``: the app over the fake server."""

    def make(
        approval: str = "auto",
        first: str | None = None,
        options: SessionOptions | None = None,
        extra: str = "",
    ) -> ChatApp:
        configure(home, server, extra=extra)
        settings = load(home, work, approval=approval, work_dir=str(work))
        return ChatApp(settings, options or SessionOptions(), history_for(home), first)

    return make
