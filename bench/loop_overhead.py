"""Loop overhead per iteration: a 50-iteration scripted tool loop, total minus provider time.

The baseline in the same run drives the same scripted provider and the same tool directly, with
no agent loop around them, so the difference is what the loop itself costs (event hand-over,
argument validation, approval, history). Loop and baseline runs alternate (A B A B ...), so a
machine that gets busier or quieter during the run affects both alike. Prints median and p90 per
iteration, in microseconds.

    .venv/bin/python bench/loop_overhead.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from openheim.loop import Agent
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolKind, ToolSet
from openheim.tools.decorator import tool
from openheim.tools.sandbox import PathSandbox

ITERATIONS = 50
TARGET_US = 1000.0


@tool(read_only=True, kind=ToolKind.READ)
async def noop(n: int) -> str:
    """Return the number."""
    return str(n)


class TimedProvider:
    """Wraps a provider and adds up the time spent inside its stream."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        it = self.inner.stream(request).__aiter__()
        while True:
            start = time.perf_counter()
            try:
                item = await it.__anext__()
            except StopAsyncIteration:
                self.seconds += time.perf_counter() - start
                return
            self.seconds += time.perf_counter() - start
            yield item

    async def aclose(self) -> None:
        await self.inner.aclose()


def script() -> list[Reply]:
    steps = [Reply(tool_calls=[tool_call("noop", {"n": i})]) for i in range(ITERATIONS - 1)]
    return [*steps, Reply("done")]


async def one_loop_run(ctx: ToolContext) -> float:
    provider = TimedProvider(ScriptedProvider(script()))
    agent = Agent(provider, "m", tools=ToolSet([noop]), context=ctx, max_iterations=ITERATIONS)
    start = time.perf_counter()
    async for _ in agent.run([Message.user("go")]):
        pass
    total = time.perf_counter() - start
    return (total - provider.seconds) / ITERATIONS


async def one_baseline_run(ctx: ToolContext) -> float:
    provider = TimedProvider(ScriptedProvider(script()))
    history = [Message.user("go")]
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        request = ModelRequest("m", tuple(history))
        async for item in provider.stream(request):
            if isinstance(item, ModelResponse):
                history.append(item.message)
                for call in item.message.tool_uses:
                    await noop.call(noop.parse(call.arguments), ctx)
    total = time.perf_counter() - start
    return (total - provider.seconds) / ITERATIONS


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(PathSandbox(tmp), Path(tmp).resolve())
        loop_us: list[float] = []
        base_us: list[float] = []
        for _ in range(repeats):  # alternated: A B A B
            loop_us.append(await one_loop_run(ctx) * 1e6)
            base_us.append(await one_baseline_run(ctx) * 1e6)
    med, base = statistics.median(loop_us), statistics.median(base_us)
    print(f"loop overhead per iteration ({ITERATIONS}-iteration tool loop, {repeats} runs)")
    print(f"  agent loop : median {med:8.1f} us   p90 {percentile(loop_us, 0.9):8.1f} us")
    print(f"  baseline   : median {base:8.1f} us   p90 {percentile(base_us, 0.9):8.1f} us")
    print(f"  loop / baseline = {med / base:.2f}x; median / target (1 ms) = {med / TARGET_US:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    asyncio.run(main(parser.parse_args().repeats))
