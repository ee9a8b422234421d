"""HTTP/1.1 framing for the providers' transport: the request head, a response's head, and its
body read from an asyncio stream as it arrives.

Strict where a server can go wrong: a status line or header that is not well-formed, a body
framed two ways, a chunk size that is not hexadecimal or a connection closed before the body's
end are ``ProtocolError``; header names and values that would break a request's framing (CR, LF,
NUL) are refused before anything is sent. Response heads are bounded by the stream's limit, and
the informational (1xx) heads before the answer in number and in bytes together.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

PIECE = 65536
_STATUS = re.compile(rb"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\r\n\0]")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_MAX_HEADERS = 200
MAX_INTERIM = 5
"""Informational (1xx) heads skipped before the answer's head: real servers send one or two
(100 Continue, 103 Early Hints); more, or more than ``PIECE`` bytes of them together, is a
server that never answers, and an error at once rather than at the read timeout."""


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
    head = await _final_head(reader)
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


async def _final_head(reader: asyncio.StreamReader) -> ResponseHead:
    """The first head that is not informational; at most ``MAX_INTERIM`` informational ones,
    of at most ``PIECE`` bytes together, are skipped before it (never a ``101``, which no
    request of ours asks for: what follows it is not HTTP)."""
    interim_bytes = 0
    for _ in range(MAX_INTERIM + 1):
        data = await _head_bytes(reader)
        head = _parse_head(data)
        if not 100 <= head.status < 200:
            return head
        if head.status == 101:  # no request of ours asks to switch protocols
            raise ProtocolError(
                "the server switched protocols (101) though the request did not ask it to: "
                "it is misbehaving"
            )
        interim_bytes += len(data)
        if interim_bytes > PIECE:
            raise ProtocolError(
                f"the server's informational (1xx) responses are larger than {PIECE} bytes "
                "together: it is misbehaving"
            )
    raise ProtocolError(
        f"the server sent more than {MAX_INTERIM} informational (1xx) responses before its "
        "answer: it is misbehaving"
    )


class BodyReader:
    """A response body read from its stream, one ``read`` per wait for the socket.

    ``read`` is a plain coroutine (no generator between the socket and its caller) that
    returns all the body bytes that arrived so far: a chunked body is decoded from whatever
    the stream holds (``ChunkDecoder``) instead of one read per line. ``overread`` tells
    whether bytes past the body's end were taken from the stream (a server that sent more than
    it framed): its connection must not be reused."""

    __slots__ = ("_decoder", "_left", "_reader", "overread")

    def __init__(self, reader: asyncio.StreamReader, head: ResponseHead) -> None:
        self._reader = reader
        self._left = head.length
        chunked = head.length is None and head.values(b"transfer-encoding")
        self._decoder = ChunkDecoder() if chunked else None  # HEAD, 204, 304: none at all
        self.overread = False

    async def read(self) -> bytes:
        """The next bytes of the body; ``b""`` once it ended. Raises ProtocolError if the
        connection ends before the body does."""
        decoder = self._decoder
        if decoder is not None:
            while not decoder.done:
                data = await self._reader.read(PIECE)
                if not data:
                    raise ProtocolError(decoder.cut())
                piece = decoder.feed(data)
                if piece:
                    return piece
            self.overread = decoder.extra
            return b""
        left = self._left
        if left is None:  # delimited by the connection's close
            return await self._reader.read(PIECE)
        if not left:
            return b""
        piece = await self._reader.read(min(left, PIECE))
        if not piece:
            raise ProtocolError("the server closed the connection before the response ended")
        self._left = left - len(piece)
        return piece


class ChunkDecoder:
    """The ``chunked`` transfer coding, decoded from bytes as they arrive.

    ``feed`` takes what the stream held and returns the payload in it (chunk boundaries do
    not matter to a body's reader). Strict as a server can go wrong: a size that is not
    hexadecimal, chunk data not followed by CRLF, or a size or trailer line longer than
    ``PIECE`` bytes is ``ProtocolError``. After the last chunk and its trailers ``done`` is
    set; ``extra`` says whether more bytes followed them."""

    __slots__ = ("_left", "_line", "_step", "done", "extra")

    def __init__(self) -> None:
        self._step = _SIZE
        self._left = 0
        """Bytes of the current chunk's data still to come."""
        self._line = b""
        """An incomplete line (or CRLF) kept from the last feed."""
        self.done = False
        self.extra = False

    def feed(self, data: bytes) -> bytes:
        """The payload in ``data``; may be empty (a size line alone)."""
        if self._line:
            data, self._line = self._line + data, b""
        if self._step is _SIZE and not self._left:  # the usual case: whole chunks
            end = data.find(b"\r\n")
            if end > 0 and data.endswith(b"\r\n"):
                start = end + 2
                size = _chunk_size(data[:end])
                if size and start + size + 2 == len(data):
                    return data[start : start + size]
        return self._feed(data)

    def _feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        pos, size = 0, len(data)
        while pos < size and not self.done:
            step = self._step
            if step is _DATA:
                take = min(self._left, size - pos)
                out.append(data[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._step = _CRLF
            elif step is _CRLF:
                if size - pos < 2:
                    if data[pos:] != b"\r":
                        raise ProtocolError("a chunk of the response is longer than its size")
                    self._line = data[pos:]
                    break
                if data[pos : pos + 2] != b"\r\n":
                    raise ProtocolError("a chunk of the response is longer than its size")
                pos += 2
                self._step = _SIZE
            else:
                end = data.find(b"\r\n", pos)
                if end < 0:
                    self._keep(data[pos:])
                    break
                self._line_ended(data[pos:end])
                pos = end + 2
        self.extra = self.done and pos < size
        return b"".join(out)

    def _keep(self, line: bytes) -> None:
        if len(line) > PIECE:
            raise ProtocolError("a line of the chunked response is too long")
        self._line = line

    def _line_ended(self, line: bytes) -> None:
        """A size line (or, after the last chunk, a trailer line) ended."""
        if len(line) > PIECE:
            raise ProtocolError("a line of the chunked response is too long")
        if self._step is _TRAILER:
            self.done = not line
            return
        self._left = _chunk_size(line)
        self._step = _DATA if self._left else _TRAILER

    def cut(self) -> str:
        """What it means that the stream ended here."""
        if self._step is _DATA or self._step is _CRLF:
            return "the server closed the connection inside a chunk"
        return "the server closed the connection inside a chunked body"


_SIZE, _DATA, _CRLF, _TRAILER = "size", "data", "crlf", "trailer"


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip()
    if not _HEX.fullmatch(size):
        raise ProtocolError(f"bad chunk size {size[:20]!r} in the response")
    return int(size, 16)


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
