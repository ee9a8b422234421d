"""Usage from a real ``llama_cpp.server``, which streams none: the server counts it afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from openheim.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock
from openheim.providers import create_provider
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings
from openheim.providers.llama_server import LlamaServerProvider
from openheim.providers.server_usage import generated_text

pytest.importorskip("uvicorn", reason="needs the local extra: llama-cpp-python[server]")

MODEL = "SmolLM2-135M-Instruct"
QUESTION = "Name three colours."


async def test_a_streamed_answer_gets_the_servers_own_token_counts(tmp_path: Path) -> None:
    """Cut at ``max_tokens``, the answer is exactly that many tokens; the prompt is what the
    server reports for the same messages when asked without streaming."""
    settings = ProviderSettings(
        "local",
        "llama_server",
        "",
        MODEL,
        n_ctx=1024,
        server_command=(sys.executable, "-m", "llama_cpp.server"),
        data_dir=tmp_path,
        startup_timeout=60.0,
    )
    provider = create_provider(settings)
    assert isinstance(provider, LlamaServerProvider)
    try:
        request = ModelRequest(MODEL, (Message.user(QUESTION),), max_tokens=12, temperature=0.0)
        items = [item async for item in provider.stream(request)]
        assert provider.api_base is not None
        async with httpx.AsyncClient(timeout=60) as client:
            messages = [{"role": "user", "content": QUESTION}]
            body = {"model": MODEL, "messages": messages, "max_tokens": 1}
            reference = await client.post(f"{provider.api_base}/chat/completions", json=body)
            reference.raise_for_status()
    finally:
        await provider.aclose()
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish == "max_tokens"
    assert response.usage.output_tokens == 12
    assert response.usage.input_tokens == reference.json()["usage"]["prompt_tokens"] > 0


def test_generated_text_is_thinking_text_and_calls_in_order() -> None:
    answer = Message(
        "assistant",
        (
            ThinkingBlock("Plan. "),
            TextBlock("Reading. "),
            ToolUseBlock("c1", "read_file", {"path": "a"}),
        ),
    )
    assert generated_text(answer) == 'Plan. Reading. read_file{"path":"a"}'
