"""The pacer of ``FakeLLMServer``: one thread writes every slow stream's chunks when they fall due.

A reply with a ``chunk_delay`` would otherwise keep its handler thread waking up for each chunk;
with a thousand streams at once, those wake-ups (each taking the interpreter lock in turn) cost
more than the chunks themselves and come late. Here the handler thread sleeps until its stream
is done (or needs it back), and a single thread keeps a heap of due times and writes each chunk
in turn. Each stream keeps its own clock, as a model generating tokens does: chunk ``k`` falls
due ``k + 1`` delays after the stream began, so a chunk written late does not push back the
ones after it (nor bunch the streams written in the same late moment together for good). A
chunk is written only as far as the socket takes it at once (``Writer.write`` never
blocks), so a client that stops reading never holds the others back: its stream, with the part
of a chunk the socket did not take, goes back to its own thread.
"""

from __future__ import annotations

import heapq
import itertools
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


def http_chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


class Writer(Protocol):
    """Where a stream's bytes go, without waiting: how many of them were taken."""

    def write(self, data: bytes, /) -> int: ...


class SocketWriter:
    """A ``Writer`` over a blocking socket: each write sends what the socket takes at once."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def write(self, data: bytes, /) -> int:
        try:
            return self.sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0


@dataclass
class PacedStream:
    """One stream's chunks, from ``sent`` on, each ``delay`` seconds after the one before;
    ``stop_at`` is the first index the handler must take over (a hang or cut, or the end)."""

    sock: socket.socket
    out: Writer
    chunks: Sequence[bytes]
    delay: float
    stop_at: int
    sent: int = 0
    waited: bool = False
    """Whether the delay before chunk ``sent`` has already passed (handed back when the socket
    had no room for it)."""
    rest: bytes = b""
    """The end of chunk ``sent - 1`` that the socket did not take: its own thread writes it."""
    failed: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Pacer:
    """Writes paced streams from one thread (see the module docstring)."""

    def __init__(self, closing: threading.Event, clock: Callable[[], float] = time.monotonic):
        self._closing = closing
        self._clock = clock
        self._heap: list[tuple[float, int, PacedStream]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def run(self, stream: PacedStream) -> None:
        """Write ``stream``'s chunks up to ``stop_at`` (or until it is handed back), blocking the
        calling handler thread until then; ``stream.failed`` holds a write error."""
        with self._wake:
            if self._closing.is_set():
                return
            heapq.heappush(self._heap, (self._clock() + stream.delay, next(self._order), stream))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="FakeLLMPacer", daemon=True)
                self._thread.start()
            self._wake.notify()
        stream.done.wait()

    def stop(self) -> None:
        """Hand every waiting stream back to its thread (the server is closing)."""
        with self._wake:
            self._wake.notify()

    def _loop(self) -> None:
        stream: PacedStream | None = None
        try:
            while (due_now := self._next_due()) is not None:
                due, stream = due_now
                if self._write(stream):
                    with self._wake:  # on the stream's own clock: a late write does not
                        due += stream.delay  # push back the chunks after it
                        heapq.heappush(self._heap, (due, next(self._order), stream))
                else:
                    stream.done.set()
                stream = None
        finally:  # never leave a handler thread waiting, whatever stopped this one
            with self._wake:
                waiting = [s for _, _, s in self._heap] + ([stream] if stream else [])
                self._heap.clear()
                self._thread = None
            for left in waiting:
                left.done.set()

    def _next_due(self) -> tuple[float, PacedStream] | None:
        """When the next chunk was due and its stream, waiting for it; None once the server
        closes."""
        with self._wake:
            while not self._closing.is_set():
                if not self._heap:
                    self._wake.wait()
                    continue
                wait = self._heap[0][0] - self._clock()
                if wait <= 0:
                    due, _, stream = heapq.heappop(self._heap)
                    return due, stream
                self._wake.wait(wait)
            return None

    def _write(self, stream: PacedStream) -> bool:
        """Write the due chunk; True when the stream has more for the pacer."""
        if stream.sent >= stream.stop_at:
            return False
        try:
            room = select.poll()
            room.register(stream.sock, select.POLLOUT)
            if not room.poll(0):
                stream.waited = True  # no room: its own thread writes the rest, blocking
                return False
            chunk = stream.chunks[stream.sent]
            taken = stream.out.write(chunk)
        except Exception as err:  # the handler's thread raises it; the other streams go on
            stream.failed = err
            return False
        stream.sent += 1
        if taken < len(chunk):  # the socket is full: its own thread writes the rest, blocking
            stream.rest = chunk[taken:]
            return False
        return stream.sent < stream.stop_at
