"""``FakeLLMServer``: a real HTTP server on loopback that answers from a script.

It speaks OpenAI chat completions (``POST /v1/chat/completions``, streamed as Server-Sent Events
or as plain JSON, as the request's ``stream`` flag asks; ``GET /v1/models`` lists one model),
and the Anthropic Messages, Gemini and OpenAI Responses formats too (``fake_*.py``), so any
client of those can be tested against it: openheim's own providers, an agent built on openheim,
an ``openheim run`` subprocess, a coding-agent CLI. It runs in a background thread, so sync tests,
async tests and other processes can all talk to it::

    with FakeLLMServer([FakeReply(text="hi")]) as server:
        ...  # point the client at server.base_url
        assert server.requests[0].messages[-1]["content"] == "hello"

Replies are queued ``FakeReply`` objects, strings (plain text answers) or callables that build
a reply from the ``RecordedRequest``. When the script runs out the server answers 500 and records
the request in ``unexpected_requests``. Run as a module it serves a demo agent script; see
``main``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import urlsplit

from openheim.testing.fake_anthropic import ANTHROPIC
from openheim.testing.fake_demo import demo_reply as demo_reply
from openheim.testing.fake_demo import summarise_listing as summarise_listing
from openheim.testing.fake_gemini import GEMINI
from openheim.testing.fake_openai import OPENAI
from openheim.testing.fake_pacer import PacedStream, Pacer, SocketWriter, http_chunk
from openheim.testing.fake_replies import FakeReply, RecordedRequest, Step
from openheim.testing.fake_responses import RESPONSES
from openheim.testing.fake_wire import WireFormat

FORMATS: list[WireFormat] = [OPENAI, ANTHROPIC, GEMINI, RESPONSES]
"""The wire formats the server speaks; the first whose ``matches`` accepts a request answers."""


class FakeLLMServer:
    """A scripted OpenAI-compatible server on ``127.0.0.1`` and an ephemeral port.

    ``default`` (optional) answers whenever the queue is empty, instead of the 500 error.
    """

    def __init__(
        self,
        replies: Iterable[Step] = (),
        *,
        default: Step | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.requests: list[RecordedRequest] = []
        """Every request received, in order."""
        self.unexpected_requests: list[RecordedRequest] = []
        """Requests the script could not answer: it ran out, an unknown path, a failing callable."""
        self.default = default
        self._address = (host, port)
        self._replies: deque[Step] = deque(replies)
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._closing = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(self, *replies: Step) -> None:
        """Queue more replies."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._replies)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(
                "FakeLLMServer is not started: use it in a with block or call start()"
            )
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``api_base`` for clients: ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self._address[0]}:{self.port}/v1"

    def start(self) -> FakeLLMServer:
        """Bind and listen (so clients can connect as soon as this returns), then serve."""
        self._httpd = _HTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeLLMServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; streams held by ``hang_at`` are released and every connection closed."""
        self._closing.set()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.pacer.stop()
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def wait_for_requests(self, count: int = 1, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until ``count`` requests have arrived (e.g. from a subprocess); return them all."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(
                    f"FakeLLMServer got {len(self.requests)} request(s) within {timeout:g} s, "
                    f"expected {count}"
                )
            return list(self.requests)

    def assert_done(self) -> None:
        """Fail if a request went unanswered or a queued reply was never used."""
        with self._lock:
            problems = []
            if self.unexpected_requests:
                paths = [f"{r.method} {r.path}" for r in self.unexpected_requests]
                problems.append(f"{len(paths)} unexpected request(s): {paths}")
            if self._replies:
                problems.append(f"{len(self._replies)} scripted reply(ies) never used")
        if problems:
            raise AssertionError("FakeLLMServer: " + "; ".join(problems))

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()

    def _reject(self, request: RecordedRequest) -> None:
        with self._lock:
            self.unexpected_requests.append(request)

    def _next_reply(self, request: RecordedRequest) -> FakeReply | None:
        with self._lock:
            step = self._replies.popleft() if self._replies else self.default
        if step is None:
            return None
        if callable(step):
            step = step(request)
        return FakeReply(text=step) if isinstance(step, str) else step

    def _new_id(self) -> str:
        return f"call_fake_{next(self._ids)}"


class _HTTPServer(ThreadingHTTPServer):
    """Keeps track of open connections so ``close`` can end keep-alive and hung ones."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 4096  # the listen backlog; the default 5 puts bursts into SYN retries

    def __init__(self, address: tuple[str, int], fake: FakeLLMServer) -> None:
        self.fake = fake
        self.pacer = Pacer(fake._closing)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that hang up (they do, on purpose, in fault tests)."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError) or (
            isinstance(error, OSError) and self.fake._closing.is_set()
        ):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        with self.connections_lock:
            for connection in self.connections:
                with contextlib.suppress(OSError):  # the client may have closed it already
                    connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):  # the client or close() dropped the connection
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``server.requests`` instead of a log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        fake = self.server.fake
        request = self._read_request()
        fake._record(request)
        try:
            wire = next((f for f in FORMATS if f.matches(request)), None)
            if request.method == "GET" and request.path.endswith("/models"):
                models = {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
                self._send_json(200, models)
            elif wire is not None:
                self._answer(fake, request, wire)
            else:
                fake._reject(request)
                message = f"FakeLLMServer: no route for {request.method} {request.path}"
                self._send_json(404, {"error": {"message": message, "type": "fake_error"}})
        except ConnectionError:
            self.close_connection = True  # the client went away mid-answer

    def _read_request(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        path = urlsplit(self.path).path.rstrip("/")
        return RecordedRequest(self.command, path, headers, body, raw)

    def _answer(self, fake: FakeLLMServer, request: RecordedRequest, wire: WireFormat) -> None:
        try:
            reply = fake._next_reply(request)
        except Exception as exc:
            fake._reject(request)
            message = f"FakeLLMServer: the reply callable raised {exc!r}"
            self._send_json(500, {"error": {"message": message, "type": "fake_error"}})
            return
        if reply is None:
            fake._reject(request)
            message = (
                f"FakeLLMServer: the script ran out (request #{len(fake.requests)} was not "
                "expected); add more replies"
            )
            self._send_json(500, {"error": {"message": message, "type": "fake_error"}})
        elif reply.status >= 400:
            headers = dict(reply.headers)
            if reply.retry_after is not None:
                headers["Retry-After"] = str(reply.retry_after)
            self._send_json(reply.status, wire.error_body(reply), headers)
        elif reply.stream if reply.stream is not None else wire.wants_stream(request):
            self._send_stream(reply, wire.stream_frames(reply, request, fake._new_id))
        elif reply.hang_at is not None or reply.cut_stream_after is not None:
            self._stall(reply)
        else:
            body = wire.completion(reply, request, fake._new_id)
            self._send_json(200, body, dict(reply.headers))

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, reply: FakeReply, events: Sequence[str]) -> None:
        """Each SSE frame is one HTTP chunk, flushed at once; faults end it without a last
        chunk."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        chunks = [http_chunk(f"{event}\n\n".encode()) for event in events]
        start, waited = self._paced(reply, chunks)
        for sent in range(start, len(chunks) + 1):
            if sent in (reply.hang_at, reply.cut_stream_after):
                self._stall(reply)
                return
            if sent == len(chunks):
                break
            if reply.chunk_delay and not waited:
                self.server.fake._closing.wait(reply.chunk_delay)
            waited = False
            self.wfile.write(chunks[sent])
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _paced(self, reply: FakeReply, chunks: list[bytes]) -> tuple[int, bool]:
        """Hand a slow stream's chunks to the server's pacer (``fake_pacer``); where this
        thread goes on, and whether that chunk's delay has passed."""
        if not reply.chunk_delay:
            return 0, False
        marks = [m for m in (reply.hang_at, reply.cut_stream_after) if m is not None]
        out = SocketWriter(self.connection)
        stream = PacedStream(
            self.connection, out, chunks, reply.chunk_delay, min([len(chunks), *marks])
        )
        self.server.pacer.run(stream)
        if isinstance(stream.failed, OSError | ValueError):  # ValueError: a closed socket
            raise ConnectionError(f"the client went away: {stream.failed}") from stream.failed
        if stream.failed is not None:
            raise stream.failed
        if stream.rest:
            self.wfile.write(stream.rest)
        return stream.sent, stream.waited

    def _stall(self, reply: FakeReply) -> None:
        """Hang until the server closes (``hang_at``), or drop the connection at once."""
        if reply.hang_at is not None:
            self.server.fake._closing.wait()
        self.close_connection = True


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m openheim.testing.fake_server``: serve until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(
        prog="python -m openheim.testing.fake_server",
        description="A scripted OpenAI-compatible server on loopback, for testing agents.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="answer every conversation with a list_dir tool call, then a summary of its result",
    )
    parser.add_argument(
        "--reply",
        action="append",
        default=[],
        metavar="TEXT",
        help="answer with TEXT (repeatable, used in order before --demo)",
    )
    args = parser.parse_args(argv)
    if not args.demo and not args.reply:
        parser.error("nothing to serve: pass --demo or at least one --reply TEXT")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with FakeLLMServer(
        args.reply, default=demo_reply if args.demo else None, host=args.host, port=args.port
    ) as server:
        if args.port_file is not None:
            partial = args.port_file.with_name(args.port_file.name + ".tmp")
            partial.write_text(f"{server.port}\n")
            partial.replace(args.port_file)  # atomic: a waiting script never reads half a file
        print(f"fake LLM server listening on {server.base_url}", file=sys.stderr, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
