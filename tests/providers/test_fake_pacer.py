"""FakeLLMServer's pacer: slow streams share one writing thread, keep their pace, and a client
that stops reading never holds the others back."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from openheim.testing.fake_pacer import PacedStream, Pacer
from openheim.testing.fake_replies import FakeReply
from openheim.testing.fake_server import FakeLLMServer

DEADLINE = 30.0


def ask(server: FakeLLMServer, text: str = "hi") -> socket.socket:
    """A raw connection that has sent one streamed chat request."""
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}
    ).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    return sock


def read_stream(sock: socket.socket) -> tuple[str, list[float]]:
    """The streamed text, and when each content delta arrived (read until the last chunk)."""
    data, times, seen = b"", [], 0
    while not data.endswith(b"0\r\n\r\n"):
        got = sock.recv(1 << 16)
        if not got:
            break
        data += got
        now = time.monotonic()
        count = data.count(b'"content": "')
        times += [now] * (count - seen)
        seen = count
    text = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in data.decode().split("\r\n")
        if line.startswith("data: {")
    )
    return text, times


def pacer_threads() -> int:
    return sum(t.name == "FakeLLMPacer" for t in threading.enumerate())


def test_paced_streams_share_one_thread_and_keep_their_delay() -> None:
    pieces = [f"p{i} " for i in range(5)]
    with FakeLLMServer(default=FakeReply(chunks=pieces, chunk_delay=0.05)) as server:
        began = time.monotonic()
        socks = [ask(server, f"s{i}") for i in range(40)]
        results: list[tuple[str, list[float]]] = []
        readers = [
            threading.Thread(target=lambda s=s: results.append(read_stream(s))) for s in socks
        ]
        for reader in readers:
            reader.start()
        server.wait_for_requests(40, timeout=DEADLINE)
        busy_pacers = pacer_threads()
        for reader in readers:
            reader.join(DEADLINE)
        for sock in socks:
            sock.close()
    assert busy_pacers == 1
    assert len(results) == 40
    for text, times in results:
        assert text == "".join(pieces)
        assert times[-1] - began >= 5 * 0.05  # five delays, none skipped


@pytest.mark.parametrize(
    "big",
    [
        ["x" * (256 * 1024) for _ in range(40)],  # 10 MiB: more than loopback buffers hold
        ["a ", "x" * (8 * 1024 * 1024)],  # one chunk larger than the room the socket has left
    ],
    ids=["many-chunks", "one-huge-chunk"],
)
def test_a_client_that_stops_reading_does_not_hold_the_others_back(big: list[str]) -> None:
    small = [f"q{i} " for i in range(5)]
    replies = [FakeReply(chunks=big, chunk_delay=0.001), FakeReply(chunks=small, chunk_delay=0.02)]
    with FakeLLMServer(replies) as server:
        stalled = ask(server, "stalled")
        server.wait_for_requests(1, timeout=DEADLINE)
        time.sleep(0.5)
        began = time.monotonic()
        with ask(server, "reader") as reader:
            reader.settimeout(10)
            text, _ = read_stream(reader)
        took = time.monotonic() - began
        with stalled:
            stalled_text, _ = read_stream(stalled)
    assert text == "".join(small)
    assert took < 5, f"the reading client waited {took:.1f} s behind the stalled one"
    assert stalled_text == "".join(big)


def test_a_paced_stream_that_hangs_is_released_by_close() -> None:
    reply = FakeReply(chunks=["a ", "b ", "c "], chunk_delay=0.01, hang_at=2)
    server = FakeLLMServer([reply]).start()
    with ask(server) as sock:
        data = b""
        while data.count(b'"content": "') < 2:
            data += sock.recv(1 << 16)
        began = time.monotonic()
        server.close()
        while sock.recv(1 << 16):
            pass
        assert time.monotonic() - began < 10
    assert b'"content": "c ' not in data
    assert pacer_threads() == 0


def test_a_client_gone_mid_stream_leaves_the_server_serving() -> None:
    replies = [
        FakeReply(chunks=[f"{i} " for i in range(50)], chunk_delay=0.01),
        FakeReply(chunks=["ok"], chunk_delay=0.01),
    ]
    with FakeLLMServer(replies) as server:
        gone = ask(server)
        gone.recv(1)
        gone.close()
        with ask(server) as sock:
            text, _ = read_stream(sock)
    assert text == "ok"


def test_a_failing_writer_fails_its_own_stream_only() -> None:
    class Broken:
        def write(self, data: bytes) -> int:
            raise RuntimeError("broken writer")

    class Kept:
        def __init__(self) -> None:
            self.data: list[bytes] = []

        def write(self, data: bytes) -> int:
            self.data.append(data)
            return len(data)

    pacer = Pacer(threading.Event())
    kept = Kept()
    pairs = [socket.socketpair() for _ in range(2)]
    broken = PacedStream(pairs[0][0], Broken(), [b"1", b"2"], 0.001, 2)
    fine = PacedStream(pairs[1][0], kept, [b"1", b"2", b"3"], 0.001, 3)
    threads = [threading.Thread(target=pacer.run, args=(s,)) for s in (broken, fine)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    for sock in (s for pair in pairs for s in pair):
        sock.close()
    assert isinstance(broken.failed, RuntimeError) and broken.sent == 0
    assert (fine.failed, fine.sent, kept.data) == (None, 3, [b"1", b"2", b"3"])


def test_a_late_chunk_does_not_push_back_the_ones_after_it() -> None:
    """Each stream keeps its own clock, as a model generating tokens does: chunk ``k`` is due
    ``k + 1`` delays after the stream began, however late the chunk before it was written."""
    delay, slow = 0.2, 0.6

    class Slow:
        def __init__(self) -> None:
            self.times: list[float] = []

        def write(self, data: bytes) -> int:
            self.times.append(time.monotonic())
            if len(self.times) == 2:
                time.sleep(slow)  # the pacer falls behind at the second chunk
            return len(data)

    out = Slow()
    a, b = socket.socketpair()
    with a, b:
        began = time.monotonic()
        stream = PacedStream(a, out, [b"%d" % i for i in range(6)], delay, 6)
        Pacer(threading.Event()).run(stream)
    assert stream.sent == 6 and stream.failed is None
    last = out.times[-1] - began
    assert last >= 6 * delay - 0.01  # no chunk early
    pushed_back = 2 * delay + slow + 4 * delay  # where the late chunk would move the last one
    assert last < pushed_back - 0.3, f"the last chunk came at {last:.2f} s"
