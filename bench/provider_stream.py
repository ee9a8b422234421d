"""CPU per streamed delta on the provider side: from the socket to the agent loop's hand.

``--calls`` concurrent calls through the stack a session uses (``ContextFitter`` around
``RetryingProvider`` around ``OpenAIChatProvider`` on the asyncio transport) stream from a
loopback server in this process. Each tick the server sends one chunked SSE delta to every
call straight on its sockets, and the clock (this process's CPU time) runs only while the
event loop carries those deltas to the consumers: the server's own sends and the calls' start
and end are not counted. Beside it, taking turns, the floor: the same bytes read off raw
asyncio streams with nothing parsed (what the event loop alone costs). Prints the median and
p90 per delta of ``--rounds`` rounds, and the provider's cost above the floor. Run it against
two source trees (``PYTHONPATH=.../src``), alternately, to compare them. It runs on uvloop, as
``openheim serve`` does (uvicorn's choice), unless ``--loop asyncio``.

    .venv/bin/python bench/provider_stream.py [--calls 500] [--deltas 40] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import AsyncIterator

from openheim.events import TextDelta
from openheim.messages import Message, Usage
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderSettings,
    StreamItem,
)
from openheim.providers.context import ContextFitter
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.providers.retry import RetryingProvider

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(payload: str) -> bytes:
    data = f"data: {payload}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


def _delta(i: int) -> bytes:
    choice = {"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}
    return _chunk(json.dumps({"id": "chatcmpl-1", "model": "m", "choices": [choice]}))


END = (
    _chunk(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    + _chunk("[DONE]")
    + b"0\r\n\r\n"
)


class Server:
    """Answers each request with the event stream's head and keeps the socket, so that a
    tick can send the next delta on every one of them."""

    def __init__(self) -> None:
        self.streams: list[int] = []
        """The file descriptors of the answered requests' sockets."""
        self.started = asyncio.Event()
        self.calls = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
                return  # the call's client closed, or the bench ended
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            writer.write(HEAD)
            await writer.drain()
            self.streams.append(writer.get_extra_info("socket").fileno())
            if len(self.streams) == self.calls:
                self.started.set()

    def send(self, data: bytes) -> None:
        for fd in self.streams:
            os.write(fd, data)


class Floor:
    """The floor beside the provider: the same bytes read off a raw asyncio stream, one item
    per delta and nothing parsed (what the event loop alone costs)."""

    name = "floor"

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
        await reader.readuntil(b"\r\n\r\n")
        while not (data := await reader.read(65536)).endswith(b"\r\n0\r\n\r\n"):
            for _ in range(data.count(b'"content"')):
                yield TextDelta("")
        yield ModelResponse(Message.assistant(""), "end_turn", Usage())

    async def aclose(self) -> None:
        if self.streams is not None:
            self.streams[1].close()


class Consumers:
    """Counts the items the calls received; ``reached`` wakes when all have ``target``."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.behind = calls
        self.reached = asyncio.Event()
        self.target = 0

    def expect(self, target: int) -> None:
        self.target, self.behind = target, self.calls
        self.reached.clear()

    async def consume(self, provider: Provider, request: ModelRequest) -> None:
        seen = 0
        async for _ in provider.stream(request):
            seen += 1
            if seen == self.target:
                self.behind -= 1
                if not self.behind:
                    self.reached.set()


async def one_round(providers: list[Provider], server: Server, deltas: int) -> float:
    """CPU seconds per delta spent carrying ``deltas`` deltas to every call."""
    request = ModelRequest(model="m", messages=(Message.user("go"),))
    consumers = Consumers(len(providers))
    server.streams, server.calls = [], len(providers)
    server.started.clear()
    calls = [asyncio.create_task(consumers.consume(p, request)) for p in providers]
    await server.started.wait()
    spent = 0.0
    for i in range(deltas):
        consumers.expect(i + 1)
        server.send(_delta(i))
        start = time.process_time()
        await consumers.reached.wait()
        spent += time.process_time() - start
    server.send(END)
    await asyncio.gather(*calls)
    return spent / deltas / len(providers)


async def main(calls: int, deltas: int, rounds: int) -> None:
    server = Server()
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, backlog=4096)
    port = listener.sockets[0].getsockname()[1]
    settings = ProviderSettings(
        name="bench", kind="openai_compatible", api_base=f"http://127.0.0.1:{port}/v1", model="m"
    )
    runs: dict[str, list[Provider]] = {
        "provider": [
            ContextFitter(RetryingProvider(OpenAIChatProvider(settings)), 100_000)
            for _ in range(calls)
        ],
        "floor (raw stream)": [Floor(port) for _ in range(calls)],
    }
    results: dict[str, list[float]] = {name: [] for name in runs}
    for providers in runs.values():
        await one_round(providers, server, 2)  # connections opened and warm
    for _ in range(rounds):
        for name, providers in runs.items():
            results[name].append(await one_round(providers, server, deltas) * 1e6)
    for providers in runs.values():
        for provider in providers:
            await provider.aclose()
    listener.close()
    print(f"{calls} calls x {deltas} deltas, {rounds} rounds: CPU per delta (microseconds)")
    for name, values in results.items():
        p90 = statistics.quantiles(values, n=10)[-1] if rounds > 1 else values[0]
        print(f"  {name:20} median {statistics.median(values):5.1f}  p90 {p90:5.1f}")
    path = statistics.median(results["provider"]) - statistics.median(results["floor (raw stream)"])
    print(f"  provider minus floor: {path:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--deltas", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--loop", choices=["asyncio", "uvloop"], default="uvloop", help="uvloop: as `serve` runs"
    )
    args = parser.parse_args()
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(main(args.calls, args.deltas, args.rounds))
    else:
        asyncio.run(main(args.calls, args.deltas, args.rounds))
