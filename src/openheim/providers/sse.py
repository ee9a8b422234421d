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

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

import httpx

from openheim.providers.base import closing_stream

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
        try:
            text = data.decode()
        except UnicodeDecodeError as exc:
            bad = data[exc.start : exc.end]
            raise EventStreamError(
                f"the event stream is not valid UTF-8 ({exc.reason} at {bad!r})"
            ) from None
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


class EventStream:
    """A streamed response read as events; ``response`` stays at hand for its status and
    headers (and for reading a body that is not an event stream at all)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def events(self) -> AsyncGenerator[Event, None]:
        """The body's events as they complete."""
        parser = EventParser()
        async with closing_stream(self._chunks()) as chunks:
            async for chunk in chunks:
                for event in parser.feed(chunk):
                    yield event

    def _chunks(self) -> AsyncIterator[bytes]:
        encoding = self.response.headers.get("content-encoding", "").strip().lower()
        if encoding in _PLAIN:
            return self.response.aiter_raw()
        return self.response.aiter_bytes()
