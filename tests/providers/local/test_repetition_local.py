"""The repetition guard on the embedded model: a reply that loops is stopped in the provider,
and llama.cpp stops generating at once."""

from __future__ import annotations

from openheim.events import Notice
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse
from openheim.providers.llama_cpp import LlamaCppProvider
from openheim.providers.repetition import RepetitionGuard
from tests.providers.local.test_demo import DEMO_PROMPT, REPO_LAYOUT
from tests.providers.local.test_llama_cpp import settings

SYSTEM = "You are openheim, an AI agent working in the user's project directory."
LOOPING = "The folder . holds:\n{}\n\nUsing only this result, answer: {}"
"""A listing told one name a line (as answers were framed before): SmolLM2-135M, decoding
greedily, writes the list and then repeats its last lines until its output limit."""


async def test_a_looping_reply_of_the_embedded_model_is_stopped_early() -> None:
    assert DEMO_PROMPT is not None
    inner = LlamaCppProvider(settings())
    guard = RepetitionGuard(inner)
    prompt = Message.user(LOOPING.format("\n".join(REPO_LAYOUT), DEMO_PROMPT.group(1)))
    request = ModelRequest("SmolLM2-135M-Instruct", (prompt,), system=SYSTEM, max_tokens=512)
    try:
        items = [item async for item in guard.stream(request)]
    finally:
        await guard.aclose()
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish == "repetition", items
    assert any(isinstance(i, Notice) and "repeating itself" in i.message for i in items)
    assert inner.stats.generated_tokens < 200  # of the 512 it was allowed
    assert inner.stats.tokens_after_cancel <= 1
