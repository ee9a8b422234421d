"""The gateway run in the test's event loop against fake platforms and ``FakeLLMServer``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from openheim.config.load import Settings, load_settings
from openheim.gateway.service import serve
from openheim.testing import FakeLLMServer
from tests.gateway.loopback import WAIT


def write_config(home: Path, llm: FakeLLMServer, gateway: str) -> None:
    """A config for the fake model with ``gateway`` as the body of its ``[gateway]`` tables."""
    (home / "config.toml").write_text(
        f'default_provider = "fake"\n[providers.fake]\nkind = "openai_compatible"\n'
        f'api_base = "{llm.base_url}"\ndefault_model = "fake-model"\n'
        f'models = ["fake-model", "fake-small"]\n\n{gateway}\n'
    )


def settings_for(home: Path, work: Path) -> Settings:
    return load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})


@contextlib.asynccontextmanager
async def running(
    home: Path,
    work: Path,
    names: tuple[str, ...],
    env: Mapping[str, str],
    webhook: socket.socket | None = None,
) -> AsyncIterator[asyncio.Task[None]]:
    """``openheim gateway`` for ``names`` while the block runs (the config already written);
    stopped as Ctrl-C stops it."""
    ready = asyncio.Event()
    task = asyncio.create_task(
        serve(settings_for(home, work), names, env, webhook_socket=webhook, ready=ready)
    )
    waiting = asyncio.ensure_future(ready.wait())
    try:
        async with asyncio.timeout(WAIT):
            done, _ = await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task in done:
            task.result()  # raises what stopped it
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT)
