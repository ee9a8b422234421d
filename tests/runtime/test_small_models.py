"""A provider marked small gets the compact prompt and tools; hosted ones keep the full ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openheim.config.load import load_settings
from openheim.config.providers import SHIPPED_MODEL_TOOL_ROUNDS, resolve_provider
from openheim.providers.base import ProviderSettings
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.cli.test_cli import configure, openheim


def system_and_tools(request: RecordedRequest) -> tuple[str, list[str], int]:
    body = request.body
    system = str(body["messages"][0]["content"])
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    return system, tools, len(json.dumps(body.get("tools", [])))


def first_request(home: Path, work: Path, extra: str) -> RecordedRequest:
    with FakeLLMServer([FakeReply(text="ok")]) as server:
        configure(home, server, extra=extra)
        done = openheim("run", "--no-session", "hi", home=home, cwd=work)
        assert done.returncode == 0, done.stderr
        return server.requests[0]


def test_a_small_provider_gets_the_compact_prompt(home: Path, work: Path) -> None:
    small = system_and_tools(first_request(home, work, "small = true\n"))
    full = system_and_tools(first_request(home, work, ""))
    assert small[1][:4] == ["read_file", "list_dir", "glob", "search"]
    assert small[1][-1] == "more_tools" and "web_fetch" not in small[1]
    assert "web_fetch" in full[1] and "more_tools" not in full[1]
    assert small[2] * 3 < full[2]
    assert str(work) not in small[0] and f"Working directory: {work}" in full[0]


def test_a_small_provider_answers_after_its_tool_rounds(home: Path, work: Path) -> None:
    call = FakeToolCall("list_dir", {"path": "."})
    with FakeLLMServer([FakeReply(tool_calls=[call]), FakeReply(text="notes.txt")]) as server:
        configure(home, server, extra="small = true\ntool_rounds = 1\n")
        done = openheim("run", "--no-session", "what is here?", home=home, cwd=work)
        assert done.returncode == 0, done.stderr
        assert [r.body.get("tool_choice") for r in server.requests] == [None, "none"]
    assert done.stdout.strip() == "notes.txt"


def resolved(home: Path, work: Path, config: str) -> ProviderSettings:
    (home / "config.toml").write_text(config)
    settings = load_settings(None, cwd=work, env={"OPENHEIM_HOME": str(home)})
    return resolve_provider(settings, env={})


@pytest.mark.parametrize(
    ("name", "table", "small", "rounds"),
    [
        ("local", "", True, SHIPPED_MODEL_TOOL_ROUNDS),
        ("local", 'default_model = "other.gguf"', True, None),
        ("local", 'model_path = "/m/x.gguf"', True, None),
        ("local", "tool_rounds = 4", True, 4),
        ("local", 'kind = "llama_server"\nsmall = false', False, SHIPPED_MODEL_TOOL_ROUNDS),
        ("p", 'api_base = "http://127.0.0.1:1/v1"\ndefault_model = "m"', False, None),
        ("p", 'api_base = "http://127.0.0.1:1/v1"\ndefault_model = "m"\nsmall = true', True, None),
    ],
)
def test_small_and_tool_rounds_defaults(
    home: Path, work: Path, name: str, table: str, small: bool, rounds: int | None
) -> None:
    config = f'default_provider = "{name}"\n[providers.{name}]\n{table}\n'
    chosen = resolved(home, work, config)
    assert (chosen.small, chosen.tool_rounds) == (small, rounds)


@pytest.mark.parametrize(
    ("table", "choice"),
    [
        ("", "required"),
        ('tool_choice = "auto"', "auto"),
        ('model_path = "/m/x.gguf"', "auto"),
        ('default_model = "other.gguf"\ntool_choice = "required"', "required"),
    ],
)
def test_the_shipped_model_must_call_a_tool_first(
    home: Path, work: Path, table: str, choice: str
) -> None:
    """Left to choose, SmolLM2-135M called no tool when asked what files a folder holds."""
    config = f'default_provider = "local"\n[providers.local]\n{table}\n'
    assert resolved(home, work, config).tool_choice == choice


@pytest.mark.parametrize(
    ("extra", "flags", "first"),
    [
        ("", (), None),
        ('tool_choice = "required"\n', (), "required"),
        ('tool_choice = "required"\n', ("--tool-choice", "auto"), None),
        ("", ("--tool-choice", "required"), "required"),
    ],
)
def test_the_providers_tool_choice_applies_unless_the_run_names_one(
    home: Path, work: Path, extra: str, flags: tuple[str, ...], first: str | None
) -> None:
    call = FakeToolCall("list_dir", {"path": "."})
    with FakeLLMServer([FakeReply(tool_calls=[call]), FakeReply(text="a")]) as server:
        configure(home, server, extra=extra)
        done = openheim("run", "--no-session", *flags, "what is here?", home=home, cwd=work)
        assert done.returncode == 0, done.stderr
        assert [r.body.get("tool_choice") for r in server.requests] == [first, None]


def test_the_shipped_model_decodes_greedily_and_briefly(home: Path, work: Path) -> None:
    shipped = resolved(home, work, 'default_provider = "local"\n')
    assert (shipped.temperature, shipped.max_tokens) == (0.0, 256)
    table = 'default_provider = "local"\n[providers.local]\ntemperature = 0.5\nmax_tokens = 9\n'
    configured = resolved(home, work, table)
    assert (configured.temperature, configured.max_tokens) == (0.5, 9)
    other = resolved(
        home, work, 'default_provider = "local"\n[providers.local]\nmodel_path = "/x.gguf"\n'
    )
    assert (other.temperature, other.max_tokens, other.tool_rounds) == (None, None, None)


def test_a_tool_named_by_tool_choice_is_offered_to_a_small_model(home: Path, work: Path) -> None:
    call = FakeToolCall("web_fetch", {"url": "http://127.0.0.1:9/"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), FakeReply(text="done")]) as server:
        configure(home, server, extra="small = true\ntool_rounds = 1\n")
        args = ("run", "--no-session", "--tool-choice", "web_fetch", "fetch it")
        done = openheim(*args, home=home, cwd=work)
        assert done.returncode == 0, done.stderr
        _, tools, _ = system_and_tools(server.requests[0])
    assert "web_fetch" in tools and tools[-1] == "more_tools"
