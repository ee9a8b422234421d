"""The provider kinds ``claude_cli``, ``codex_cli`` and ``opencode_cli``: config resolution,
history flattened to one prompt, streamed text and usage, and failures that fall through."""

from __future__ import annotations

import stat
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from openheim.cliagents.spec import CLAUDE
from openheim.config.load import load_settings
from openheim.config.providers import resolve_provider
from openheim.errors import ProviderError
from openheim.events import TextDelta
from openheim.messages import Message, ToolResultBlock, ToolUseBlock
from openheim.providers import create_provider
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.cli_agent import CLOSING, CliAgentProvider, flatten
from openheim.providers.fallback import FallbackProvider, falls_through
from openheim.testing import ScriptedProvider
from tests.cliagents.standin import FORKS, echo_script, write_script
from tests.processes import alive, wait_until


def _settings(tmp_path: Path, body: str) -> ProviderSettings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(body)
    settings = load_settings(cwd=tmp_path, env={"OPENHEIM_HOME": str(home)})
    return resolve_provider(settings, env={})


def test_cli_kinds_resolve_with_the_clis_own_model_and_a_longer_timeout(tmp_path: Path) -> None:
    chosen = _settings(
        tmp_path,
        'default_provider = "cc"\n[providers.cc]\nkind = "claude_cli"\n'
        'cli_path = "/opt/claude"\ncli_env_allow = ["AWS_*"]\n',
    )
    assert (chosen.kind, chosen.model, chosen.timeout_secs) == ("claude_cli", "default", 300.0)
    assert chosen.cli_path == "/opt/claude" and chosen.cli_env_allow == ("AWS_*",)
    named = _settings(tmp_path, 'default_provider = "codex_cli"\n[providers.codex_cli]\n')
    assert named.kind == "codex_cli"


def test_flatten_keeps_roles_calls_and_results() -> None:
    call = ToolUseBlock("c1", "read_file", {"path": "a.txt"})
    request = ModelRequest(
        "m",
        (
            Message.user("read a.txt"),
            Message("assistant", (call,)),
            Message("user", (ToolResultBlock("c1", "hello"),)),
        ),
        system="Be brief.",
    )
    text = flatten(request)
    assert text.startswith("<system>\nBe brief.\n</system>")
    assert '[called tool read_file with {"path": "a.txt"}]' in text
    assert "[tool result]\nhello" in text
    assert text.endswith(CLOSING)
    assert flatten(ModelRequest("m", (Message.user("just this"),))) == "just this"


def _provider(tmp_path: Path, program: Path | None) -> ProviderSettings:
    return ProviderSettings(
        name="cc",
        kind="claude_cli",
        api_base="",
        model="default",
        cli_path=None if program is None else str(program),
        timeout_secs=30,
    )


async def _items(settings: ProviderSettings, request: ModelRequest) -> list[StreamItem]:
    provider = create_provider(settings)
    try:
        return [item async for item in provider.stream(request)]
    finally:
        await provider.aclose()


async def test_the_provider_streams_text_and_usage(tmp_path: Path) -> None:
    settings = _provider(tmp_path, echo_script(tmp_path))
    items = await _items(settings, ModelRequest("default", (Message.user("hello cli"),)))
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.text == "echo 9 hello cli"
    assert "".join(deltas) == "echo9hellocli"
    assert response.usage.input_tokens == 3 and response.usage.output_tokens == 2


async def test_a_missing_cli_falls_through_to_the_next_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC_ADAPTER_CLAUDE_BIN", raising=False)
    request = ModelRequest("default", (Message.user("hi"),))
    with pytest.raises(ProviderError, match="the claude CLI is not installed") as caught:
        await _items(_provider(tmp_path, None), request)
    assert falls_through(caught.value) and not caught.value.retryable
    backup = ScriptedProvider(["from backup"], name="backup")
    chain = FallbackProvider(
        [(create_provider(_provider(tmp_path, None)), "default"), (backup, "b")]
    )
    items = [item async for item in chain.stream(request)]
    assert isinstance(items[-1], ModelResponse) and items[-1].message.text == "from backup"


async def test_closing_the_providers_stream_stops_the_cli(tmp_path: Path) -> None:
    provider = CliAgentProvider(_provider(tmp_path, write_script(tmp_path, FORKS)), CLAUDE)
    stream = provider.stream(ModelRequest("default", (Message.user("hi"),)))
    assert isinstance(stream, AsyncGenerator)
    assert await stream.__anext__() == TextDelta("started")
    folder = provider._folder
    assert folder is not None and stat.S_IMODE(folder.stat().st_mode) == 0o700
    pids = [int(p) for p in (folder / "pids").read_text().split()]
    assert all(alive(pid) for pid in pids)
    await stream.aclose()
    await wait_until(lambda: not any(alive(pid) for pid in pids))
    await provider.aclose()
    assert not folder.exists()
