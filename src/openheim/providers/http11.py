"""HTTP/1.1 framing for the providers' transport: the request head, a response's head, and its
body read from an asyncio stream as it arrives.

Strict where a server can go wrong: a status line or header that is not well-formed, a body
framed two ways, a chunk size that is not hexadecimal or a connection closed before the body's
end are ``ProtocolError``; header names and values that would break a request's framing (CR, LF,
NUL) are refused before anything is sent. Response heads are bounded by the stream's limit.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence

PIECE = 65536
_STATUS = re.compile(rb"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\r\n\0]")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_MAX_HEADERS = 200


class ProtocolError(Exception):
    """The peer broke HTTP/1.1 (or a request would have)."""


class ResponseHead:
    """A response's status line and headers, and how its body is framed."""

    __slots__ = ("headers", "keep_alive", "length", "reason", "status")

    def __init__(
        self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]], minor: int
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.length: int | None = None
        """Content-Length; None for a chunked or close-delimited body."""
        self.keep_alive = minor == 1 and b"close" not in _tokens(self, b"connection")

    def values(self, name: bytes) -> list[bytes]:
        return [value for key, value in self.headers if key.lower() == name]


def request_head(method: str, target: bytes, headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """The request line and headers, ready to send."""
    if not _TOKEN.fullmatch(method.encode()) or b" " in target or _BAD_VALUE.search(target):
        raise ProtocolError(f"cannot send a request {method} {target!r}")
    lines = [b"%s %s HTTP/1.1" % (method.encode(), target)]
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise ProtocolError(f"cannot send the header {name!r}: it holds a forbidden character")
        lines.append(name + b": " + value)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def chunked(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body (empty data ends the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b"0\r\n\r\n"


async def read_head(reader: asyncio.StreamReader, method: str) -> ResponseHead:
    """The final response head (``1xx`` informational responses are skipped), with its body's
    framing decided."""
    while True:
        head = _parse_head(await _head_bytes(reader))
        if not 100 <= head.status < 200:
            break
    if method == "HEAD" or head.status in (204, 304):
        head.length = 0
    elif head.values(b"transfer-encoding"):
        if _tokens(head, b"transfer-encoding") != [b"chunked"]:
            raise ProtocolError("the response's Transfer-Encoding is not chunked")
        if head.values(b"content-length"):  # framed two ways: a sign of response splitting
            raise ProtocolError("the response has both Transfer-Encoding and Content-Length")
    else:
        head.length = _content_length(head)
        head.keep_alive = head.keep_alive and head.length is not None
    return head


async def body(reader: asyncio.StreamReader, head: ResponseHead) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive; raises ProtocolError if the connection ends early."""
    if head.length is not None:
        left = head.length
        while left:
            piece = await reader.read(min(left, PIECE))
            if not piece:
                raise ProtocolError("the server closed the connection before the response ended")
            left -= len(piece)
            yield piece
    elif head.values(b"transfer-encoding"):
        async for piece in _chunks(reader):
            yield piece
    else:
        while piece := await reader.read(PIECE):
            yield piece


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        line = (await _line(reader)).split(b";", 1)[0].strip()
        if not _HEX.fullmatch(line):
            raise ProtocolError(f"bad chunk size {line[:20]!r} in the response")
        left = int(line, 16)
        if left == 0:
            while await _line(reader):  # trailers, up to the empty line
                pass
            return
        if left <= PIECE:  # the usual chunk (an event of a stream): one read, with its CRLF
            yield await _small_chunk(reader, left)
            continue
        while left:
            piece = await reader.read(min(left, PIECE))
            if not piece:
                raise ProtocolError("the server closed the connection inside a chunk")
            left -= len(piece)
            yield piece
        if await _line(reader):
            raise ProtocolError("a chunk of the response is longer than its size")


async def _small_chunk(reader: asyncio.StreamReader, size: int) -> bytes:
    """A chunk's ``size`` bytes, read with the CRLF that must end them."""
    try:
        data = await reader.readexactly(size + 2)
    except asyncio.IncompleteReadError:
        raise ProtocolError("the server closed the connection inside a chunk") from None
    if data[-2:] != b"\r\n":
        raise ProtocolError("a chunk of the response is longer than its size")
    return data[:-2]


async def _line(reader: asyncio.StreamReader) -> bytes:
    try:
        return (await reader.readuntil(b"\r\n"))[:-2]
    except asyncio.IncompleteReadError:
        raise ProtocolError("the server closed the connection inside a chunked body") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("a line of the chunked response is too long") from None


async def _head_bytes(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as err:
        if err.partial:
            raise ProtocolError(
                "the server closed the connection inside the response head"
            ) from None
        raise ProtocolError("the server disconnected without sending a response") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("the response head is too large") from None


def _parse_head(data: bytes) -> ResponseHead:
    status_line, *lines = data[:-4].split(b"\r\n")
    matched = _STATUS.fullmatch(status_line)
    if matched is None:
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:60]!r}")
    if len(lines) > _MAX_HEADERS:
        raise ProtocolError("the response has too many headers")
    headers = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise ProtocolError(f"bad header line in the response: {line[:60]!r}")
        headers.append((name, value.strip(b" \t")))
    minor, status = int(matched.group(1)), int(matched.group(2))
    return ResponseHead(status, matched.group(3) or b"", headers, minor)


def _content_length(head: ResponseHead) -> int | None:
    values = {v.strip() for value in head.values(b"content-length") for v in value.split(b",")}
    if not values:
        return None
    if len(values) > 1 or not all(v.isdigit() for v in values):
        raise ProtocolError(f"bad Content-Length in the response: {sorted(values)!r}")
    return int(values.pop())


def _tokens(head: ResponseHead, name: bytes) -> list[bytes]:
    return [t.strip().lower() for value in head.values(name) for t in value.split(b",")]
