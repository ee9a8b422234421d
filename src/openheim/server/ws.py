"""``/ws``: one WebSocket carrying the ``agent``, ``fs`` and ``system`` channels.

The server first sends ``{"channel": "system", "data": {"type": "connected", ...}}``. A client
that sent the system request ``watch_busy`` then gets a ``session_busy`` system frame
(``session_id``, ``busy``) whenever a turn begins or ends in any open session
(``server.busy``). Each client frame is answered on its channel with its ``id`` echoed. A
frame over the size limit, not JSON or not a ``{channel, data}`` object gets an ``error`` on
the ``system`` channel and the connection stays open.

Frames to the client keep their order whichever task produced them. A frame produced while
nothing waits to be sent (most of a streaming session's frames) is sent at the end of the
event loop's turn, by one callback for the frames this connection made in that turn, through
the server's ASGI ``send`` (the per-call checks of Starlette's ``WebSocket.send`` are made
once, here). The callbacks of every connection run one after another, so the server's socket
writes come in a burst rather than spread between the turn's other work, which costs the
system less per write (a client reading many sockets is woken once for several). A send that
does not finish at once, and every frame behind it, waits in one queue that one writer task
sends in order. So a streamed delta costs no task wake-up, and a client that reads slowly
still makes frames pile up in the queue (``MAX_PENDING`` frames or ``MAX_PENDING_BYTES``
bytes at most, and ``MAX_TOTAL_PENDING_BYTES`` for all clients together). The frames
replayed to a client attaching are always queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Generator, Iterable
from typing import Any

from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from openheim._version import __version__
from openheim.errors import OpenheimError
from openheim.mailbox import Mailbox
from openheim.redaction.secrets import redact
from openheim.server.agent import AgentChannel
from openheim.server.context import ServerContext
from openheim.server.frames import BadRequest, parse_frame, reply_id
from openheim.server.fs import FsChannel
from openheim.serving.auth import SUBPROTOCOL

log = logging.getLogger(__name__)

MAX_PENDING = 50_000
"""Frames queued for one client before it counts as too slow and is disconnected (room for a
whole replay of a session's kept frames)."""
MAX_PENDING_BYTES = 64 * 1024 * 1024
"""Bytes of frames queued for one client before it counts as too slow and is disconnected: a
client that stops reading while it asks for big frames (``fs`` reads of up to 4 MiB, again and
again) would otherwise make the server hold up to ``MAX_PENDING`` of them. 64 MiB holds a whole
replay of a session's 10,000 kept frames at 6 KiB each (a streamed delta's frame is about 150
bytes, a tool result's a few KiB), and the largest ``fs`` read (a 4 MiB file, up to six
times that escaped to ASCII JSON) twice over. Frames are ASCII JSON, so a frame's length is
its bytes."""
MAX_TOTAL_PENDING_BYTES = 256 * 1024 * 1024
"""Bytes of frames queued for all clients together: past it, the client holding the most is
disconnected as too slow (each client's own budget alone let every new connection that stops
reading add ``MAX_PENDING_BYTES`` more)."""


class Connection:
    """One ``/ws`` client: its outgoing frames and its channels.

    ``send`` is the ASGI send callable under ``websocket``; without it every frame goes
    through the queue and ``websocket.send_text``."""

    def __init__(self, websocket: WebSocket, context: ServerContext, send: Send | None = None):
        self.websocket = websocket
        self.context = context
        self.queue: Mailbox[str | Unfinished | None] = Mailbox()
        self.queued_bytes = 0
        """The bytes of the text frames in ``queue`` (``MAX_PENDING_BYTES``)."""
        self.overflowed = False
        self.closed = False
        """True once frames can no longer be sent (the writer ended): new ones are dropped."""
        self._send = send
        self._loop = asyncio.get_running_loop()
        self._ready: list[str] = []
        """Frames to send at the end of this turn (``flush``), before any made after them."""
        self._writing = False
        self._closer: asyncio.Future[None] | None = None
        self.agent = AgentChannel(context, self)
        self.fs = FsChannel(context, self.send)

    def push(self, frame: str) -> None:
        """An agent-channel frame of an attached session (JSON text, serialised once)."""
        self._put(f'{{"channel": "agent", "data": {frame}}}')

    def replay(self, frames: Iterable[str]) -> None:
        """Agent-channel frames a session kept, for this client attaching: queued (never sent
        at once), so a client that cannot take them in time is disconnected (``_enqueue``)."""
        for frame in frames:
            self._queue(f'{{"channel": "agent", "data": {frame}}}')

    def send(self, channel: str, data: dict[str, Any]) -> None:
        """A frame of the connection's own (a reply, an fs event), as ASCII JSON: a string
        UTF-8 cannot carry (a file name that is not UTF-8, an id with a lone surrogate) goes
        out escaped, as in every agent frame, instead of failing the socket's send."""
        self._put(json.dumps({"channel": channel, "data": data}))

    def _put(self, text: str) -> None:
        """Send a frame at the end of this turn when nothing waits before it, else queue it."""
        if self._ready:
            self._ready.append(text)
        elif self._send is not None and self._idle():
            self._ready.append(text)
            self._loop.call_soon(self.flush)
        else:
            self._queue(text)

    def _idle(self) -> bool:
        """Nothing waits to be sent and the socket takes frames: a new one may go at once."""
        return (
            not self.queue
            and not self._writing
            and not self.closed
            and not self.overflowed
            and self.websocket.application_state is WebSocketState.CONNECTED
        )

    def flush(self) -> None:
        """Send the frames made ready in this turn (a send that has to wait, and the frames
        after it, go to the writer)."""
        ready, self._ready = self._ready, []
        for text in ready:
            if self._send is not None and self._idle():
                self._send_now(self._send, text)
            else:
                self._queue(text)

    def _send_now(self, send: Send, text: str) -> None:
        """Run the send's first step here; a send that has to wait is finished by the writer,
        before any frame queued after it."""
        steps = send({"type": "websocket.send", "text": text}).__await__()
        try:
            waiting = steps.send(None)
        except StopIteration:
            return
        except Exception:  # the socket is gone (as in the writer, the client is not told)
            log.debug("a frame could not be sent", exc_info=True)
            self._close()
            return
        self.queue.put(Unfinished(steps, waiting))

    def _queue(self, text: str) -> None:
        """Queue a frame after those made ready before it."""
        if self._ready:
            ready, self._ready = self._ready, []
            for early in ready:
                self._enqueue(early)
        self._enqueue(text)

    def _enqueue(self, text: str) -> None:
        """Queue a frame; a client that lets ``MAX_PENDING`` frames or ``MAX_PENDING_BYTES``
        bytes pile up is disconnected (1013, try again later): it re-attaches and reads what it
        missed from the store."""
        if self.overflowed or self.closed:
            return
        size = self.queued_bytes + len(text)
        if len(self.queue) >= MAX_PENDING or size > MAX_PENDING_BYTES:
            self.disconnect_slow()
            return
        self.queued_bytes = size
        self.queue.put(text)
        backlog = self.context.backlog
        backlog.clients.add(self)
        backlog.total += len(text)
        if backlog.total > MAX_TOTAL_PENDING_BYTES:  # the slowest client of all goes
            max(backlog.clients, key=lambda client: client.queued_bytes).disconnect_slow()

    def disconnect_slow(self) -> None:
        """Disconnect the client as too slow (1013, try again later), its queue dropped."""
        self.overflowed = True
        self._drop()
        self._closer = asyncio.ensure_future(self.websocket.close(code=1013))

    def _close(self) -> None:
        """No frame can be sent any more: drop the queued ones and end the writer."""
        self.closed = True
        self._drop()

    def _drop(self) -> None:
        """Drop the queued frames and end the writer."""
        self.queue.clear()
        self.context.backlog.total -= self.queued_bytes
        self.context.backlog.clients.discard(self)
        self.queued_bytes = 0
        self.queue.put(None)

    async def writer(self) -> None:
        """Send the queued frames in order, until ``None`` (or a send fails)."""
        try:
            while (item := await self.queue.get()) is not None:
                self._writing = True
                if isinstance(item, Unfinished):
                    await item
                else:
                    self.queued_bytes -= len(item)
                    self.context.backlog.total -= len(item)
                    await self.websocket.send_text(item)
                self._writing = False
                if self.overflowed:
                    return
        finally:
            self.closed = True

    async def serve(self) -> None:
        self.send("system", {"type": "connected", "version": __version__, "protocol": 1})
        writer = asyncio.create_task(self.writer())
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                await self.take(message.get("text"), message.get("bytes"))
        except WebSocketDisconnect:
            return
        finally:
            self.context.busy.listeners.discard(self.busy_changed)
            self.agent.detach_all()
            self.fs.close()
            self._close()  # what is still queued cannot reach the client any more
            with contextlib.suppress(Exception):
                await writer

    def _system(self, request: dict[str, Any]) -> dict[str, Any]:
        """``ping``, or ``watch_busy``: from now on, a ``session_busy`` frame for each turn
        that begins or ends in any open session (only clients that ask: each such change
        goes to every one of them)."""
        kind = request.get("type")
        if kind == "ping":
            return {"type": "pong"}
        if kind == "watch_busy":
            self.context.busy.listeners.add(self.busy_changed)
            return {"type": "watching_busy"}
        raise BadRequest(
            f"unknown system request {kind!r}", "the system channel answers ping and watch_busy"
        )

    def busy_changed(self, session_id: str, busy: bool) -> None:
        """A turn began or ended in an open session: a ``session_busy`` system frame."""
        self.send("system", {"type": "session_busy", "session_id": session_id, "busy": busy})

    async def take(self, text: str | None, data: bytes | None) -> None:
        """Answer one frame."""
        limit = self.context.max_frame_bytes
        size = len(data) if data is not None else len((text or "").encode())
        if size > limit:
            self._error("system", None, f"the frame is {size} bytes, over {limit}", _smaller())
            return
        if text is None:
            self._error("system", None, "binary frames are not accepted", "send JSON as text")
            return
        try:
            channel, request = parse_frame(text)
        except BadRequest as err:
            self._error("system", None, err.message, err.hint)
            return
        await self.dispatch(channel, request)

    async def dispatch(self, channel: str, request: dict[str, Any]) -> None:
        rid = reply_id(request)
        try:
            if channel == "agent":
                reply = await self.agent.handle(request)
            elif channel == "fs":
                reply = await self.fs.handle(request)
            else:
                reply = self._system(request)
        except BadRequest as err:
            self._error(channel, rid, err.message, err.hint)
            return
        except OpenheimError as err:
            self._error(channel, rid, err.message, err.hint or "")
            return
        except Exception:  # the connection outlives a bug in one request
            log.exception("a %s request failed", channel)
            self._error(channel, rid, "the request failed inside the server", "see its log")
            return
        self.send(channel, {**reply, "id": rid} if rid is not None else reply)

    def _error(self, channel: str, rid: str | int | None, message: str, hint: str) -> None:
        data: dict[str, Any] = {"type": "error", "message": redact(message), "hint": redact(hint)}
        if rid is not None:
            data["id"] = rid
        self.send(channel, data)


def _smaller() -> str:
    return "send smaller frames ([server] max_frame_bytes)"


async def accept(websocket: WebSocket) -> None:
    """Accept the upgrade, with the ``openheim.v1`` subprotocol when the client offers it (a
    browser that offered subprotocols fails the connection unless one is chosen)."""
    offered = websocket.scope.get("subprotocols") or []
    await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)


class WsEndpoint:
    """``/ws`` as a plain ASGI app, so that its connections hold the server's ``send``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        context: ServerContext = websocket.app.state.openheim
        await accept(websocket)
        await Connection(websocket, context, send).serve()


ws_endpoint = WsEndpoint()


class Unfinished:
    """A send whose first step ran elsewhere and is waiting: awaiting it runs the rest (what
    it waits for first is ``waiting``), passing on what the awaiting task throws in."""

    def __init__(self, steps: Generator[Any, None, Any], waiting: Any) -> None:
        self.steps = steps
        self.waiting = waiting

    def __await__(self) -> Generator[Any, None, None]:
        waiting = self.waiting
        while True:
            try:
                yield waiting
            except GeneratorExit:
                self.steps.close()
                raise
            except BaseException as err:  # a cancel, for one: the send decides what it means
                try:
                    waiting = self.steps.throw(err)
                except StopIteration:
                    return
            else:
                try:
                    waiting = self.steps.send(None)
                except StopIteration:
                    return
