"""Embedded model speed: the ``llama_cpp`` provider against raw llama-cpp-python, same run.

Both generate from the same prompt with the same model, context, threads, seed and sampling
(temperature 0, at most a fixed token count), and both rates count the same unit: tokens the
model generated (end-of-text excluded), the provider's from its own stats, the raw side's by
counting what ``Llama.generate`` yields. Runs alternate (A B A B ...). Prints tokens per second
(median, p90 over runs) for each, their ratio (target at least 0.95), and the time to first
token of the provider.

    .venv/bin/python bench/local_model.py [--runs 5] [--tokens 128]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Generator, Sequence
from typing import Any

from llama_cpp import Llama

from openheim.events import TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ProviderSettings
from openheim.providers.llama_cpp import SAMPLING, LlamaCppProvider
from openheim.providers.local_models import shipped_model_path

PROMPT = "Write a long story about a lighthouse keeper and the sea."
N_CTX = 2048


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class CountingLlama(Llama):
    """``Llama`` counting the tokens its generator yields, end-of-text excluded: the unit the
    provider's ``generated_tokens`` counts (a streamed chunk may hold more or less than one)."""

    generated = 0

    def generate(self, *args: Any, **kwargs: Any) -> Generator[int, Sequence[int] | None, None]:
        eos = self.token_eos()
        for token in super().generate(*args, **kwargs):
            if token != eos:
                self.generated += 1
            yield token


def raw_run(llm: CountingLlama, tokens: int) -> float:
    """Tokens per second of llama-cpp-python's own streaming chat completion."""
    llm.reset()  # type: ignore[no-untyped-call]
    llm.generated = 0
    start = time.perf_counter()
    stream = llm.create_chat_completion(
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=tokens,
        temperature=0.0,
        stream=True,
        top_k=int(SAMPLING["top_k"]),
        top_p=SAMPLING["top_p"],
        min_p=SAMPLING["min_p"],
        repeat_penalty=SAMPLING["repeat_penalty"],
    )
    for _ in stream:
        pass
    return llm.generated / (time.perf_counter() - start)


async def provider_run(provider: LlamaCppProvider, tokens: int) -> tuple[float, float]:
    """Tokens per second and time to first token through the provider."""
    provider.forget_prompt_cache()
    request = ModelRequest("m", (Message.user(PROMPT),), max_tokens=tokens, temperature=0.0)
    start = time.perf_counter()
    first = 0.0
    async for item in provider.stream(request):
        if isinstance(item, TextDelta) and not first:
            first = time.perf_counter() - start
    elapsed = time.perf_counter() - start
    return provider.stats.generated_tokens / elapsed, first


async def main(runs: int, tokens: int) -> None:
    path = shipped_model_path()
    if path is None:
        raise SystemExit("the shipped model is missing: pip install 'openheim[local]'")
    settings = ProviderSettings(
        "local", "llama_cpp", "", "m", model_path=str(path), n_ctx=N_CTX, n_threads=2, seed=1
    )
    provider = LlamaCppProvider(settings)
    await provider_run(provider, 8)  # load the model, warm up
    llm = CountingLlama(model_path=str(path), n_ctx=N_CTX, n_threads=2, seed=1, verbose=False)
    raw_run(llm, 8)
    ours, first, raw = [], [], []
    for _ in range(runs):  # alternated: A B A B
        rate, ttft = await provider_run(provider, tokens)
        ours.append(rate)
        first.append(ttft * 1000)
        raw.append(raw_run(llm, tokens))
    await provider.aclose()
    med_ours, med_raw = statistics.median(ours), statistics.median(raw)
    print(f"SmolLM2-135M Q4_1, {tokens} tokens, {runs} runs, 2 threads")
    print(f"  raw llama-cpp-python : median {med_raw:7.1f} tok/s  p90 {percentile(raw, 0.9):7.1f}")
    print(
        f"  llama_cpp provider   : median {med_ours:7.1f} tok/s  p90 {percentile(ours, 0.9):7.1f}"
    )
    print(f"  provider / raw       : {med_ours / med_raw:.3f}  (target >= 0.95)")
    print(f"  time to first token  : median {statistics.median(first):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.tokens))
