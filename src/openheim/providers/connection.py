"""One socket of the providers' transport: opened on asyncio's streams, and checked before reuse.

The socket is read into a receive buffer: asyncio's plain stream protocol has the event loop
``recv`` a new 256 KiB ``bytes`` for every read, which the C allocator may serve with an
``mmap`` and give back with a ``munmap`` each time (three system calls per streamed delta).
``_Protocol`` is a ``BufferedProtocol`` instead: the loop reads into one buffer per thread
(the read and the copy out of it happen in one callback, so connections can share it) and
the bytes go on to the same ``asyncio.StreamReader`` that ``open_connection`` would make, with
its limit, flow control and ``StreamWriter`` unchanged.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import threading

from openheim.providers import http11

Origin = tuple[str, str, int]
"""Scheme, host and port."""
RECEIVE_BUFFER = 64 * 1024
"""Bytes read from the socket at most at once."""


class Connection:
    """One socket, lent back to its origin's pool once a response was read to its end on a
    keep-alive exchange (see ``transport._Body``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def open(self) -> bool:
        """Still open and quiet: neither side has closed it since its last exchange, and
        nothing arrived on the socket that the event loop has not read yet (a server's close
        seen before the loop noticed it), as httpcore checks before reusing a connection.

        Bytes the stream reader holds past the last response's end (a server that sent more
        than it framed) are not quiet either: the next request would read them as its answer.
        The reader keeps no public count of what it buffered, so the check reads its buffer and
        refuses reuse where that is not an empty ``bytearray``."""
        if self.writer.is_closing() or self.reader.at_eof():
            return False
        buffered = getattr(self.reader, "_buffer", None)
        if not isinstance(buffered, bytearray) or buffered:
            return False
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return True
        try:  # poll, not select: a busy server's descriptors pass select's limit of 1,024
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        self.writer.close()


class _Shared(threading.local):
    """The receive buffer of this thread's connections."""

    def __init__(self) -> None:
        self.buffer = bytearray(RECEIVE_BUFFER)
        self.view = memoryview(self.buffer)


_shared = _Shared()


class _Protocol(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """A stream reader's protocol that the event loop reads into ``_shared``'s buffer."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self._reader = reader

    def get_buffer(self, sizehint: int) -> memoryview:
        return _shared.view

    def buffer_updated(self, nbytes: int) -> None:
        self._reader.feed_data(_shared.view[:nbytes])


async def connect(origin: Origin, context: ssl.SSLContext) -> Connection:
    """A new connection to ``origin``, TLS-wrapped (verified by ``context``) for ``https``;
    raises ``OSError`` or ``ssl.SSLError`` when it cannot be opened."""
    scheme, host, port = origin
    tls = context if scheme == "https" else None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=http11.PIECE, loop=loop)
    protocol = _Protocol(reader)
    transport, _ = await loop.create_connection(
        lambda: protocol, host, port, ssl=tls, server_hostname=host if tls else None
    )
    return Connection(reader, asyncio.StreamWriter(transport, protocol, reader, loop))
