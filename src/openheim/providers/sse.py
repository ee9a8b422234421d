"""Server-Sent Events read straight from a response's byte chunks.

Every streamed delta from an HTTP provider is one event, so this path is hot: the parser works on
the raw bytes the transport hands over (no text decoder, no line iterator, no per-line objects in
between) and follows the WHATWG event-stream rules. Lines end in CRLF, LF or CR (a CR ending one
chunk and an LF starting the next are one line end); a BOM at the start is skipped; lines
starting with ``:`` are comments; a field without a colon has an empty value and one space after
the colon is dropped; ``data`` lines join with ``\\n``; a blank line dispatches the event (unless
it has no data); ``retry`` is ignored and an unterminated last event is never dispatched.

The stream must be UTF-8: each run of complete lines is decoded strictly (a line end is never
inside a multi-byte character, so a character split across chunks waits for its line to end),
and bytes that are not UTF-8 raise ``EventStreamError``, as does a line or an event larger than
``MAX_EVENT`` bytes. A server that compresses the stream anyway (``HTTPProvider`` asks for
``identity``) is read through httpx's content decoders instead of the raw bytes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx

from openheim.providers.transport import READ_BODY

MAX_EVENT = 16 * 1024 * 1024
"""The most bytes one line, or the data of one event, may hold."""
_BOM = b"\xef\xbb\xbf"
_PLAIN = ("", "identity")


class EventStreamError(Exception):
    """The bytes are not a well-formed UTF-8 event stream (or an event is too large)."""


@dataclass(slots=True)
class Event:
    """One dispatched event: its type (``message`` when the stream named none), its data lines
    joined by ``\\n``, and the last event id seen so far."""

    event: str
    data: str
    id: str


class EventParser:
    """Turns byte chunks into events, keeping the incomplete last line between chunks."""

    __slots__ = ("_data", "_event", "_id", "_size", "_start", "_tail", "_tail_size", "_trailing_cr")

    def __init__(self) -> None:
        self._tail: list[bytes] = []
        """The pieces of the incomplete last line (a list, so a long line is not copied over
        and over as it arrives)."""
        self._tail_size = 0
        self._trailing_cr = False
        self._start = True
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self._id = ""

    def feed(self, chunk: bytes) -> list[Event]:
        """The events that ``chunk`` completes (often none, usually one)."""
        if (
            chunk[:5] == b"data:"
            and chunk[-2:] == b"\n\n"
            and not (self._tail or self._data or self._start or self._trailing_cr)
            and chunk.find(b"\n") == len(chunk) - 2
            and b"\r" not in chunk
            and len(chunk) <= MAX_EVENT
        ):  # the usual chunk: one whole event of one data line
            value = _decoded(chunk[5:-2])
            if value[:1] == " ":
                value = value[1:]
            event = Event(self._event or "message", value, self._id)
            self._event = ""
            return [event]
        if self._trailing_cr and chunk:
            self._trailing_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._start:
            chunk = self._skip_bom(chunk)
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if not end:
            self._keep(chunk)
            return []
        data = chunk[:end]
        if self._tail:
            data = b"".join(self._tail) + data
            self._tail, self._tail_size = [], 0
        if end < len(chunk):
            self._keep(chunk[end:])
        else:
            self._trailing_cr = data[-1:] == b"\r"
        if len(data) > MAX_EVENT and max(map(len, data.splitlines())) > MAX_EVENT:
            raise EventStreamError(f"a line of the event stream exceeds {MAX_EVENT} bytes")
        return self._lines(data)

    def _skip_bom(self, chunk: bytes) -> bytes:
        """``chunk`` without the BOM that may open the stream (held back while it could still
        be the start of one)."""
        data = b"".join(self._tail) + chunk
        self._tail, self._tail_size = [], 0
        if len(data) < len(_BOM) and _BOM.startswith(data):
            return data  # no line end in it: kept as the tail, looked at again next time
        self._start = False
        return data.removeprefix(_BOM)

    def _keep(self, piece: bytes) -> None:
        """Add ``piece`` to the incomplete last line."""
        if piece:
            self._tail.append(piece)
            self._tail_size += len(piece)
            if self._tail_size > MAX_EVENT:
                raise EventStreamError(f"a line of the event stream exceeds {MAX_EVENT} bytes")

    def _lines(self, data: bytes) -> list[Event]:
        """The events completed by ``data``, which ends at a line end."""
        text = _decoded(data)
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        events: list[Event] = []
        for line in text.split("\n")[:-1]:
            if not line:
                if self._data:
                    events.append(self._dispatch())
                else:
                    self._event = ""
                continue
            name, _, value = line.partition(":")
            if value and value[0] == " ":
                value = value[1:]
            if name == "data":
                self._size += len(value) + 1
                if self._size > MAX_EVENT:
                    raise EventStreamError(
                        f"an event of the event stream exceeds {MAX_EVENT} bytes"
                    )
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id" and "\0" not in value:
                self._id = value
        return events

    def _dispatch(self) -> Event:
        data = self._data
        joined = data[0] if len(data) == 1 else "\n".join(data)
        event = Event(self._event or "message", joined, self._id)
        self._event = ""
        self._data = []
        self._size = 0
        return event


def _decoded(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.end]
        raise EventStreamError(
            f"the event stream is not valid UTF-8 ({exc.reason} at {bad!r})"
        ) from None


class EventStream:
    """A streamed response read as events; ``response`` stays at hand for its status and
    headers (and for reading a body that is not an event stream at all).

    A response from openheim's own transport is read through its ``READ_BODY`` coroutine,
    straight from the socket; any other (or a compressed one) through httpx's iterators, which
    ``aclose`` closes."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._parser = EventParser()
        self._chunks: AsyncIterator[bytes] | None = None
        encoding = response.headers.get("content-encoding", "").strip().lower()
        self._plain = encoding in _PLAIN
        read = response.extensions.get(READ_BODY) if self._plain else None
        self._read: Callable[[], Awaitable[bytes]] = read or self._next_chunk

    async def next_events(self) -> list[Event]:
        """The events the body's next bytes complete; ``[]`` once the body ended."""
        read, parser = self._read, self._parser
        while chunk := await read():
            if events := parser.feed(chunk):
                return events
        return []

    async def events(self) -> AsyncGenerator[Event, None]:
        """The body's events as they complete."""
        try:
            while events := await self.next_events():
                for event in events:
                    yield event
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close httpx's iterator over the body, if one was started."""
        chunks, self._chunks = self._chunks, None
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()

    async def _next_chunk(self) -> bytes:
        if self._chunks is None:
            response = self.response
            self._chunks = response.aiter_raw() if self._plain else response.aiter_bytes()
        async for chunk in self._chunks:
            if chunk:
                return chunk
        return b""
