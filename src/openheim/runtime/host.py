"""The task that hosts a session: it keeps the session's context open until ``close()``.

``open_session`` is an async context manager whose parts (MCP clients among them) must be
entered and left by one task, while a library user or a protocol server opens a session in one
request and closes it in another. So such a session lives in a task of its own that holds the
context open until it is closed; prompts run in the caller's task and share the session's agent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openheim.runtime.session import Session

log = logging.getLogger(__name__)


class Host:
    """The task that keeps one session's context open until ``close()``."""

    def __init__(self) -> None:
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, opener: Callable[[], AbstractAsyncContextManager[Session]]) -> Session:
        ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(opener, ready))
        try:
            return await asyncio.shield(ready)
        except asyncio.CancelledError:
            self._task.cancel()
            raise

    async def _hold(
        self,
        opener: Callable[[], AbstractAsyncContextManager[Session]],
        ready: asyncio.Future[Session],
    ) -> None:
        try:
            async with opener() as session:
                ready.set_result(session)
                await self._closing.wait()
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except Exception as err:
            if ready.done():
                log.warning("closing a session failed", exc_info=True)
            else:
                ready.set_exception(err)

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


async def host_session(opener: Callable[[], AbstractAsyncContextManager[Session]]) -> Session:
    """Open a session in a task of its own; its ``close()`` ends that task."""
    host = Host()
    session = await host.open(opener)
    session.hosted(host.close)
    return session
