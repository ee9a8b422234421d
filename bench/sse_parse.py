"""Cost per streamed delta of reading Server-Sent Events: httpx-sse beside ``providers.sse``.

Both read the same bytes from the same kind of ``httpx.Response`` (one chunk per event, as
deltas arrive over a socket): the old chain is ``aiter_raw`` -> ``aiter_bytes`` -> ``aiter_text``
-> httpx-sse's line splitter -> ``EventSource.aiter_sse``; the new one is ``aiter_raw`` ->
``EventParser`` -> ``EventStream.events``. A third row runs the OpenAI provider's whole stream
over the new chain (its POST answered in process, events to ``TextDelta``s and the final
response), to show what the reader itself adds.
Runs take turns (A B C A B C ...); prints the median and p90 per delta in microseconds.

    .venv/bin/python bench/sse_parse.py [--deltas 2000] [--repeats 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
from httpx_sse import EventSource

from openheim.messages import Message
from openheim.providers.base import ModelRequest, ProviderSettings
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.providers.sse import EventStream

URL = "http://127.0.0.1:9/v1/chat/completions"


class Chunks(httpx.AsyncByteStream):
    """A response body handed over in the given pieces."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def pieces(deltas: int) -> list[bytes]:
    """An OpenAI-style stream: one ``chat.completion.chunk`` event per piece, then ``[DONE]``."""
    out = []
    for i in range(deltas):
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}],
        }
        out.append(f"data: {json.dumps(chunk)}\n\n".encode())
    final = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    out.append(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
    return out


def response(body: list[bytes]) -> httpx.Response:
    return httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=Chunks(body),
        request=httpx.Request("POST", URL),
    )


async def old_chain(body: list[bytes]) -> int:
    count = 0
    async for event in EventSource(response(body)).aiter_sse():
        count += len(event.data) > 0
    return count


async def new_chain(body: list[bytes]) -> int:
    count = 0
    async for event in EventStream(response(body)).events():
        count += len(event.data) > 0
    return count


def reader(body: list[bytes]) -> tuple[OpenAIChatProvider, Callable[[list[bytes]], Awaitable[int]]]:
    """The provider's whole stream over the new chain, its POST answered with ``body``."""

    def answer(request: httpx.Request) -> httpx.Response:
        return response(body)

    settings = ProviderSettings(name="bench", kind="openai_compatible", model="m", api_base=URL)
    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    provider = OpenAIChatProvider(settings, client)
    request = ModelRequest("m", (Message.user("go"),))

    async def run(body: list[bytes]) -> int:
        return sum([1 async for _ in provider.stream(request)])

    return provider, run


async def timed(run: Callable[[list[bytes]], Awaitable[int]], body: list[bytes]) -> float:
    start = time.perf_counter()
    await run(body)
    return (time.perf_counter() - start) / len(body) * 1e6


async def main(deltas: int, repeats: int) -> None:
    body = pieces(deltas)
    runs: dict[str, Callable[[list[bytes]], Awaitable[int]]] = {
        "httpx-sse chain": old_chain,
        "providers.sse chain": new_chain,
    }
    provider, runs["providers.sse + OpenAI reader"] = reader(body)
    assert await old_chain(body) == await new_chain(body) == deltas + 2
    results: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            results[name].append(await timed(run, body))
    print(f"{deltas} deltas, {repeats} runs each, microseconds per delta:")
    for name, values in results.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"  {name:32} median {statistics.median(values):6.2f}  p90 {p90:6.2f}")
    old, new = (statistics.median(results[n]) for n in ("httpx-sse chain", "providers.sse chain"))
    print(f"  new / old: {new / old:.2f}")
    await provider._client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(main(args.deltas, args.repeats))
