"""The CLIs' command lines: containment flags present, no prompt in the arguments, and the
binary lookup order (configured path, the CLI's variable, then PATH)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openheim.cliagents.argv import (
    AGENT,
    CLAUDE_DENIED,
    MODEL,
    Containment,
    claude_argv,
    codex_argv,
    opencode_argv,
    opencode_config,
)
from openheim.cliagents.spec import CLAUDE, CODEX, OPENCODE, cli_env, find_binary
from openheim.errors import ConfigError


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_claude_agent_argv_streams_json_and_limits_tools() -> None:
    argv = claude_argv("/bin/claude", AGENT, "claude-sonnet-4-5")
    assert argv[:2] == ["/bin/claude", "--print"]
    assert _value(argv, "--output-format") == "stream-json"
    assert {"--verbose", "--include-partial-messages", "--no-session-persistence"} <= set(argv)
    assert "--strict-mcp-config" in argv
    assert json.loads(_value(argv, "--mcp-config")) == {"mcpServers": {}}
    assert _value(argv, "--setting-sources") == "user"
    tools = _value(argv, "--tools").split(",")
    assert "Bash" not in tools and "Read" in tools
    assert _value(argv, "--allowedTools").split(",") == tools
    assert set(_value(argv, "--disallowedTools").split(",")) == set(CLAUDE_DENIED)
    assert _value(argv, "--model") == "claude-sonnet-4-5"


def test_claude_model_argv_offers_no_tool_and_no_model_flag_for_default() -> None:
    argv = claude_argv("claude", MODEL, "default")
    assert _value(argv, "--tools") == ""
    assert "--allowedTools" not in argv
    assert "--model" not in argv


def test_codex_argv_never_asks_and_sandboxes() -> None:
    work = Path("/w")
    agent = codex_argv("/bin/codex", AGENT, "gpt-5", work)
    assert agent[:4] == ["/bin/codex", "--ask-for-approval", "never", "exec"]
    assert _value(agent, "--sandbox") == "workspace-write"
    assert {"--json", "--skip-git-repo-check", "--ephemeral"} <= set(agent)
    assert _value(agent, "--cd") == "/w"
    configs = [agent[i + 1] for i, arg in enumerate(agent) if arg == "--config"]
    assert {"mcp_servers={}", 'web_search="disabled"', "features.multi_agent=false"} <= set(configs)
    assert "features.shell_tool=false" not in configs
    assert agent[-1] == "-"  # the prompt comes on stdin
    model = codex_argv("codex", MODEL, "default", work)
    assert _value(model, "--sandbox") == "read-only"
    assert "features.shell_tool=false" in model and "--model" not in model


CODEX_FEATURES_OFF = (
    "multi_agent",
    "goals",
    "apps",
    "plugins",
    "browser_use",
    "computer_use",
    "image_generation",
    "hooks",
)
"""Written out, not imported: a feature dropped from ``argv.py`` must fail a row here."""


@pytest.mark.parametrize("containment", [AGENT, MODEL], ids=["agent", "model"])
@pytest.mark.parametrize("feature", CODEX_FEATURES_OFF)
def test_codex_turns_off_each_feature_that_reaches_past_the_folder(
    feature: str, containment: Containment
) -> None:
    argv = codex_argv("codex", containment, "default", Path("/w"))
    configs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--config"]
    assert f"features.{feature}=false" in configs


def test_opencode_argv_and_config() -> None:
    assert opencode_argv("/bin/opencode", "fake/m") == [
        "/bin/opencode", "run", "--format", "json", "--model", "fake/m",
    ]  # fmt: skip
    agent = opencode_config(AGENT)["permission"]
    assert agent["*"] == "deny" and agent["edit"] == "allow" and agent["read"] == "allow"
    assert "bash" not in agent and "webfetch" not in agent
    assert opencode_config(MODEL)["permission"] == {"*": "deny"}
    for containment in (AGENT, MODEL):  # no hidden second request for a session title
        assert opencode_config(containment)["agent"]["title"] == {"disable": True}


def test_no_prompt_text_ever_reaches_the_arguments() -> None:
    for argv in (
        claude_argv("c", AGENT, "m"),
        codex_argv("c", AGENT, "m", Path("/w")),
        opencode_argv("c", "m"),
    ):
        assert all(len(arg) < 200 for arg in argv)


def _program(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_find_binary_prefers_configured_then_variable_then_path(tmp_path: Path) -> None:
    on_path = _program(tmp_path, "claude")
    other = tmp_path / "other"
    other.mkdir()
    pinned = _program(other, "my-claude")
    env = {"PATH": str(tmp_path)}
    assert find_binary(CLAUDE, env) == str(on_path)
    assert find_binary(CLAUDE, {**env, "CC_ADAPTER_CLAUDE_BIN": str(pinned)}) == str(pinned)
    assert find_binary(CLAUDE, env, configured=str(pinned)) == str(pinned)
    assert find_binary(CODEX, env) is None
    assert find_binary(OPENCODE, {"PATH": str(other)}) is None


def test_find_binary_refuses_a_bad_override(tmp_path: Path) -> None:
    plain = tmp_path / "codex"
    plain.write_text("not executable")
    with pytest.raises(ConfigError, match=r"CODEX_ADAPTER_BIN names .* not an executable"):
        find_binary(CODEX, {"PATH": "", "CODEX_ADAPTER_BIN": str(plain)})


def test_cli_env_passes_the_clis_own_variables_only() -> None:
    base = {
        "PATH": "/bin",
        "ANTHROPIC_API_KEY": "sk-ant-one",
        "OPENAI_API_KEY": "sk-two",
        "CODEX_HOME": "/c",
        "UNRELATED": "x",
    }
    claude = cli_env(CLAUDE, base)
    assert claude["ANTHROPIC_API_KEY"] == "sk-ant-one"
    assert "OPENAI_API_KEY" not in claude and "UNRELATED" not in claude
    codex = cli_env(CODEX, base, allow=["UNRELATED"], extra={"X": "1"})
    assert codex["OPENAI_API_KEY"] == "sk-two" and codex["CODEX_HOME"] == "/c"
    assert codex["UNRELATED"] == "x" and codex["X"] == "1"
    assert "ANTHROPIC_API_KEY" not in codex
