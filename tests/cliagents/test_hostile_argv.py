"""A model name is the one value from outside that goes on a CLI's command line: one that a
CLI could read as a flag (``--dangerously-skip-permissions``) or that carries odd characters is
refused before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.cliagents.argv import AGENT, MODEL, claude_argv, codex_argv, opencode_argv
from openheim.errors import ProviderError

HOSTILE = [
    "--dangerously-skip-permissions",
    "-c",
    "m\x00x",
    "m x",
    "m\nx",
    "x" * 300,
]


@pytest.mark.parametrize("model", HOSTILE)
def test_a_model_name_that_is_no_plain_name_is_refused(model: str) -> None:
    with pytest.raises(ProviderError, match="model name"):
        claude_argv("claude", AGENT, model)
    with pytest.raises(ProviderError, match="model name"):
        codex_argv("codex", MODEL, model, Path("/w"))
    with pytest.raises(ProviderError, match="model name"):
        opencode_argv("opencode", model)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5.1-codex", "openrouter/x:free"])
def test_plain_model_names_pass(model: str) -> None:
    argv = claude_argv("claude", AGENT, model)
    assert argv[-2:] == ["--model", model]
