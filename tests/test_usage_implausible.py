"""Token counts a provider reports beyond any plausible call (10^30 prompt tokens, a negative
count) are clamped and flagged with a notice: the session totals stay storable and the run
ends as usual, never with an ``OverflowError`` from the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openheim.events import Notice, UsageUpdate
from openheim.messages import Usage
from openheim.testing import FakeLLMServer, FakeReply, Reply, ScriptedProvider
from openheim.tools.base import ToolContext
from openheim.usage import MAX_CALL_TOKENS, plausible
from tests.cli.test_cli import openheim
from tests.loop_support import finished, make_agent, run

HUGE = 10**30


@pytest.mark.parametrize(
    ("reported", "kept"),
    [
        (Usage(HUGE, 5), Usage(MAX_CALL_TOKENS, 5)),
        (Usage(10, HUGE), Usage(10, MAX_CALL_TOKENS)),
        (Usage(10, 5, HUGE, HUGE), Usage(10, 5, MAX_CALL_TOKENS, MAX_CALL_TOKENS)),
        (Usage(-7, 5, -1, 0), Usage(0, 5, 0, 0)),
    ],
    ids=["input", "output", "cache", "negative"],
)
def test_implausible_counts_are_clamped_and_flagged(reported: Usage, kept: Usage) -> None:
    assert plausible(reported) == (kept, True)


@pytest.mark.parametrize(
    "usage", [Usage(), Usage(10, 5, 3, 2), Usage(*(MAX_CALL_TOKENS,) * 4)], ids=str
)
def test_plausible_counts_pass_unflagged(usage: Usage) -> None:
    assert plausible(usage) == (usage, False)


async def test_the_loop_clamps_a_call_and_says_so(ctx: ToolContext) -> None:
    provider = ScriptedProvider([Reply("done", usage=Usage(HUGE, 5))])
    events, _ = await run(make_agent(provider, ctx))
    [update] = [e for e in events if isinstance(e, UsageUpdate)]
    assert update.usage == update.total == Usage(MAX_CALL_TOKENS, 5)
    assert finished(events).usage == Usage(MAX_CALL_TOKENS, 5)
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert notice.level == "warning"
    assert "implausible" in notice.message and "input_tokens" in notice.message


def _gemini_base(server: FakeLLMServer) -> str:
    return server.base_url.removesuffix("/v1") + "/v1beta"


@pytest.mark.parametrize(
    ("kind", "usage"),
    [
        ("openai", {"prompt_tokens": HUGE, "completion_tokens": 5, "total_tokens": HUGE}),
        ("openai", {"prompt_tokens": 10, "completion_tokens": HUGE, "total_tokens": HUGE}),
        ("gemini", {"promptTokenCount": HUGE, "candidatesTokenCount": 5}),
        ("gemini", {"promptTokenCount": 10, "thoughtsTokenCount": HUGE}),
        ("anthropic", {"input_tokens": HUGE, "output_tokens": 5}),
    ],
    ids=["openai prompt", "openai completion", "gemini prompt", "gemini thoughts", "anthropic"],
)
def test_a_stored_run_survives_implausible_usage(
    home: Path, work: Path, kind: str, usage: dict[str, Any]
) -> None:
    with FakeLLMServer([FakeReply(text="fine", usage=usage)]) as server:
        base = _gemini_base(server) if kind == "gemini" else server.base_url
        (home / "config.toml").write_text(
            f'default_provider = "fake"\n[providers.fake]\nkind = "{kind}"\n'
            f'api_base = "{base}"\ndefault_model = "fake-model"\napi_key = "k"\n'
        )
        result = openheim("run", "--json", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    notices = [e for e in lines if e.get("type") == "notice" and "implausible" in e["message"]]
    assert len(notices) == 1
    listed = openheim("sessions", "list", home=home, cwd=work)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
