"""The ``fs`` channel of ``/ws``: the work dir's files, through the tools' sandbox.

Requests: ``list`` (``path``, ``recursive``), ``read``, ``write`` (``content``), ``mkdir``,
``delete``, ``rename`` (``to``), ``find`` (``query``: the files an ``@`` mention may name that
best match it, for the page's picker), ``watch`` and ``unwatch`` (``path``). Every reply echoes the
request's ``id``. A watched folder pushes ``fs_event`` frames (``changes``: each an ``added``,
``modified`` or ``deleted`` path, relative to the work dir; never a change behind a symlink that
leads out) until it is unwatched or the connection ends. The operations themselves are in
``fs_ops``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openheim.chat.files import fuzzy, work_files
from openheim.process.child_env import child_env
from openheim.redaction.secrets import SecretPolicy
from openheim.server import fs_ops
from openheim.server.context import ServerContext
from openheim.server.frames import BadRequest, req_str
from openheim.tools.base import ToolContext
from openheim.tools.sandbox import PathSandbox

MAX_WATCHES = 16
MAX_FOUND = 50
"""Paths a ``find`` answers at most, best matches first."""
MAX_QUERY = 200
FOUND_FRESH = 2.0
"""Seconds the files ``find`` walked stay in use: a picker asks at every key typed, and a big
work dir is walked once per burst of typing, not once per key."""
_FIND = "send the text typed after @ as query"
CHANGE_NAMES = {1: "added", 2: "modified", 3: "deleted"}


class FsChannel:
    """The fs channel of one connection, with its watches."""

    def __init__(self, context: ServerContext, send: Callable[[str, dict[str, Any]], None]) -> None:
        self.context = context
        self.send = send
        self.watches: dict[str, tuple[asyncio.Task[None], asyncio.Event]] = {}
        self._files: tuple[float, list[str]] = (-FOUND_FRESH, [])
        """When ``find`` last walked the work dir, and the files it found."""

    @functools.cached_property
    def tool_ctx(self) -> ToolContext:
        """The tools' context of the work dir, made on the first request (an idle socket
        holds none)."""
        settings = self.context.settings
        return ToolContext(
            PathSandbox(settings.work_dir),
            settings.work_dir,
            child_env(),
            secret_policy=SecretPolicy.from_config(settings.deny_read, home=settings.home),
        )

    async def handle(self, data: dict[str, Any]) -> dict[str, Any]:
        op = req_str(data, "type")
        raw = data.get("path", ".")
        if not isinstance(raw, str):
            raise BadRequest("path must be a string", "send a path relative to the work dir")
        try:
            return await self._run(op, raw, data)
        except OSError as err:
            raise _refusal(raw, err) from None

    async def _run(self, op: str, raw: str, data: dict[str, Any]) -> dict[str, Any]:
        ctx = self.tool_ctx
        if op == "list":
            recursive = data.get("recursive", False) is True
            entries = await asyncio.to_thread(fs_ops.list_dir, ctx, raw, recursive)
            return {"type": "listing", "path": raw, "entries": entries}
        if op == "read":
            return {"type": "file", **await asyncio.to_thread(fs_ops.read_file, ctx, raw)}
        if op == "write":
            content = data.get("content")
            if not isinstance(content, str):
                raise BadRequest("content must be a string", "send the file's text as content")
            path = await asyncio.to_thread(fs_ops.write_file, ctx, raw, content)
            return {"type": "written", "path": path}
        if op == "mkdir":
            return {"type": "made", "path": await asyncio.to_thread(fs_ops.make_dir, ctx, raw)}
        if op == "delete":
            return {"type": "deleted", "path": await asyncio.to_thread(fs_ops.delete, ctx, raw)}
        if op == "rename":
            to = req_str(data, "to")
            path = await asyncio.to_thread(fs_ops.rename, ctx, raw, to)
            return {"type": "renamed", "path": path}
        if op == "find":
            query = data.get("query", "")
            if not isinstance(query, str) or len(query) > MAX_QUERY:
                raise BadRequest("query must be a string of at most 200 characters", _FIND)
            found = await asyncio.to_thread(self._find, query)
            return {"type": "found", "query": query, "paths": found}
        if op == "watch":
            return self._watch(raw)
        if op == "unwatch":
            return self._unwatch(raw)
        raise BadRequest(
            f"unknown fs request {op!r}",
            "use list, read, write, mkdir, delete, rename, find, watch or unwatch",
        )

    def _find(self, query: str) -> list[str]:
        """The work dir's files an ``@`` mention may name (as ``chat.files`` finds them: not
        ignored by git, no secret, no symlink) that best match ``query``."""
        walked, names = self._files
        if time.monotonic() - walked >= FOUND_FRESH:
            settings = self.context.settings
            policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
            names = work_files(settings.work_dir, policy)
            self._files = (time.monotonic(), names)
        return fuzzy(query, names, MAX_FOUND)

    def _watch(self, raw: str) -> dict[str, Any]:
        folder = self.tool_ctx.sandbox.resolve(raw, self.tool_ctx.cwd)
        if not folder.is_dir():
            raise BadRequest(f"{raw} is not a folder", "watch a folder") from None
        key = self.tool_ctx.display(folder)
        if key not in self.watches:
            if len(self.watches) >= MAX_WATCHES:
                raise BadRequest("too many watches", "unwatch a folder first") from None
            stop = asyncio.Event()
            self.watches[key] = (asyncio.create_task(self._follow(folder, stop)), stop)
        return {"type": "watching", "path": key}

    def _unwatch(self, raw: str) -> dict[str, Any]:
        folder = self.tool_ctx.sandbox.resolve(raw, self.tool_ctx.cwd)
        key = self.tool_ctx.display(folder)
        found = self.watches.pop(key, None)
        if found is None:
            raise BadRequest(f"{raw} is not watched", "watch it first") from None
        found[1].set()
        return {"type": "unwatched", "path": key}

    async def _follow(self, folder: Path, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        async for batch in awatch(folder, stop_event=stop, recursive=True, debounce=50):
            changes = await asyncio.to_thread(self._inside, batch)
            if changes:
                self.send("fs", {"type": "fs_event", "changes": changes})

    def _inside(self, batch: set[tuple[Any, str]]) -> list[dict[str, str]]:
        """The changes of ``batch`` whose real path is inside the work dir: the watcher follows
        symlinks, and what changes behind one that leads out is not the client's to see."""
        sandbox = self.tool_ctx.sandbox
        return [
            {"change": CHANGE_NAMES.get(int(change), "modified"), "path": sandbox.display(p)}
            for change, raw in sorted(batch, key=lambda c: c[1])
            if sandbox.contains(p := Path(raw)) and sandbox.contains(os.path.realpath(raw))
        ]

    def close(self) -> None:
        for task, stop in self.watches.values():
            stop.set()
            task.cancel()
        self.watches.clear()


def _refusal(raw: str, err: OSError) -> BadRequest:
    """A filesystem error as a one-line refusal that says what to do."""
    if isinstance(err, FileNotFoundError):
        return BadRequest(f"{raw} does not exist", "list the folder to see what is there")
    if isinstance(err, FileExistsError):
        return BadRequest("the destination exists", "pick another name or delete it first")
    if isinstance(err, NotADirectoryError):
        return BadRequest(f"a part of {raw} is not a folder", "check the path")
    if isinstance(err, IsADirectoryError):
        return BadRequest(f"{raw} is a folder", "name a file")
    return BadRequest(f"{raw}: {err.strerror or err}", "check the path and permissions")
