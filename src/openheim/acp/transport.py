"""Newline-delimited JSON-RPC over a pair of asyncio byte streams.

The SDK's own framing logs and drops a line that is not JSON; this one answers it as JSON-RPC
asks, with a parse error (-32700) or an invalid request (-32600) that says what was wrong, so a
client author sees the mistake instead of a request that never returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from openheim.formats import safejson
from openheim.formats.regex import utf8

MAX_LINE_BYTES = 50 * 1024 * 1024
"""The longest message accepted: prompts carry images as base64. Readers with a smaller limit
(asyncio's default is 64 KiB) work too; lines are read in pieces."""


class LineTransport:
    """One JSON object per line in each direction (the SDK's ``Transport`` protocol)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        """Write ``message`` as one line of UTF-8 JSON; a lone surrogate in it (a model's
        ``\\ud800``, an undecodable byte of a file name) goes out as U+FFFD, which every client
        can parse, instead of failing the request that sends it."""
        line = utf8(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
        async with self._lock:
            if self._closed:
                raise ConnectionError("the ACP connection is closed")
            self._writer.write(line)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None at end of input; bad lines are answered and skipped."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            message = await self._decode(line)
            if message is not None:
                return message

    async def close(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()

    async def _read_line(self) -> bytes | None:
        """The next line, whatever the reader's own limit (None at end of input). A line over
        ``MAX_LINE_BYTES`` is dropped and answered with an invalid-request error."""
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                part, ended = await self._reader.readuntil(b"\n"), True
            except asyncio.IncompleteReadError as err:
                if not parts and not err.partial:
                    return None
                part, ended = err.partial, True
            except asyncio.LimitOverrunError as err:
                part, ended = await self._reader.readexactly(err.consumed), False
            size += len(part)
            if size > MAX_LINE_BYTES:
                if not ended:
                    await self._skip_line()
                await self._error(-32600, "Invalid request", f"a line over {MAX_LINE_BYTES} bytes")
                return b""
            parts.append(part)
            if ended:
                return b"".join(parts)

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as err:
                await self._reader.readexactly(err.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _decode(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = safejson.loads(line)
        except (ValueError, UnicodeDecodeError) as err:
            await self._error(-32700, "Parse error", f"the line is not JSON: {err}")
            return None
        if not isinstance(message, dict):
            await self._error(
                -32600, "Invalid request", "each line must be one JSON-RPC object, not a batch"
            )
            return None
        method = message.get("method")
        if method is not None and not isinstance(method, str):
            await self._error(-32600, "Invalid request", "method must be a string", message)
            return None
        return message

    async def _error(
        self, code: int, text: str, details: str, message: dict[str, Any] | None = None
    ) -> None:
        raw_id = message.get("id") if message else None
        request_id = raw_id if isinstance(raw_id, int | str) else None
        error = {"code": code, "message": text, "data": {"details": details}}
        with contextlib.suppress(ConnectionError):
            await self.send({"jsonrpc": "2.0", "id": request_id, "error": error})
