"""JSON-RPC errors for the lines ``mcp serve`` cannot read, instead of silence.

The MCP SDK's stdio transport decodes each line itself (its decoder bounds nesting, so a value
nested thousands deep fails cleanly) and hands the server an exception in place of a message
for a line it could not read; the server then only logs it, and a client waits for an answer
that never comes. ``AnsweredReads`` wraps the server's read stream: each such exception is
answered as JSON-RPC asks, with a parse error (-32700) for a line that is not JSON (or nests too
deep) and an invalid request (-32600) for JSON that is no JSON-RPC message, both with id null,
and reading goes on with the next line.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

Item = SessionMessage | Exception


class AnsweredReads:
    """``read`` without its exceptions: each is answered on ``write`` and skipped."""

    def __init__(self, read: ReadStream[Item], write: WriteStream[SessionMessage]) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, as the wrapped stream keeps it."""
        return getattr(self._read, "last_context", None)

    async def receive(self) -> Item:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(reply_to(item)))

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._read.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def reply_to(error: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the transport could not read, its details on one line."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and problems[0]["type"] != "json_invalid":
        code, text = INVALID_REQUEST, "Invalid request"
        details = "the line is JSON but not a JSON-RPC request, notification or response"
    else:
        code, text = PARSE_ERROR, "Parse error"
        reason = str(problems[0]["msg"]) if problems else type(error).__name__
        details = f"the line is not JSON: {reason}"
    data = {"details": details.replace("\n", " ")[:300]}
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=text, data=data))
