"""The agent loop on the real embedded model, through the runtime's provider chain (envelope
protocol with grammar-constrained decoding). Asserts the mechanics, not the model's wording."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from openheim.config.load import Overrides, load_settings
from openheim.config.providers import resolve_provider
from openheim.events import Finished, ToolCall, ToolResult
from openheim.loop import Agent
from openheim.messages import Message, ToolResultBlock
from openheim.providers.base import ModelRequest, Provider, StreamItem
from openheim.runtime.provider import build_provider
from openheim.tools.base import ToolContext
from openheim.tools.builtin import builtin_tools
from openheim.tools.sandbox import PathSandbox


class Recording:
    """Keeps every request that reaches the wrapped provider chain."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        async for item in self.inner.stream(request):
            yield item

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_required_first_call_reads_the_named_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("The secret word is pineapple.\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[providers.local]\nkind = "llama_cpp"\ntemperature = 0.0\nseed = 3\nn_ctx = 4096\n'
        "max_tokens = 120\n"
    )
    settings = load_settings(
        Overrides(provider="local"), cwd=work, env={"OPENHEIM_HOME": str(home)}
    )
    chosen = resolve_provider(settings, env={})
    provider = Recording(build_provider(settings, chosen))
    tools = builtin_tools(allow_shell=False).select(["read_file"])
    context = ToolContext(PathSandbox(work), work)
    agent = Agent(
        provider,
        chosen.model,
        tools=tools,
        context=context,
        tool_choice="required",
        max_iterations=3,
        tool_rounds=chosen.tool_rounds,  # as the runtime sets it: 1 for the shipped model
    )
    history = [Message.user("Read the file notes.txt and tell me the secret word.")]
    events = [e async for e in agent.run(history)]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert calls and calls[0].name == "read_file"
    results = [e for e in events if isinstance(e, ToolResult)]
    read_ok = [r for r in results if r.status == "completed" and "pineapple" in r.content]
    if calls[0].arguments.get("path") == "notes.txt":
        assert read_ok, results
    assert len(provider.requests) >= 2
    first_round = provider.requests[1].messages[-2].tool_uses
    answer = provider.requests[1].messages[-1].content
    sent = [b.content for b in answer if isinstance(b, ToolResultBlock)]
    assert len(sent) == len(first_round)  # every call of the reply answered, in the next request
    assert sorted(sent) == sorted(r.content for r in results[: len(first_round)])
    done = events[-1]
    assert isinstance(done, Finished)
    assert done.stop_reason in {"end_turn", "max_tokens", "max_turn_requests"}
    assert len(provider.requests) == 2
    assert provider.requests[1].tool_choice == "none"  # the answer, after its one round
    await provider.aclose()
