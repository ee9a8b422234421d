"""ACP: a provider key the model streams reaches the editor redacted, in the answer (in pieces
of any size) and in the thinking."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.helpers import text_block

from openheim.testing import FakeLLMServer, FakeReply
from tests.acp.harness import acp_agent

KEY = "fake-provider-key-0123456789abcdef"
"""The provider key: it matches no key format, only its registration hides it."""


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 7, 16])
async def test_a_key_streamed_in_pieces_reaches_the_editor_redacted(
    home: Path, work: Path, size: int
) -> None:
    answer = f"Your key is {KEY}. Keep it."
    thought = f"The user's key {KEY} must stay secret."
    reply = FakeReply(chunks=pieces(answer, size), reasoning=thought)
    with FakeLLMServer([reply]) as server:
        extra = 'env_var = "FAKE_API_KEY"\n'
        async with acp_agent(home, work, server, extra=extra, env={"FAKE_API_KEY": KEY}) as agent:
            await agent.start()
            sid = await agent.new()
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("key?")])
    assert response.stop_reason == "end_turn"
    assert agent.client.text(sid) == "Your key is [REDACTED]. Keep it."
    thinking = "".join(u.content.text for u in agent.client.of_kind("agent_thought_chunk"))
    assert thinking == "The user's key [REDACTED] must stay secret."
    every_update = repr(agent.client.updates)
    assert KEY[:12] not in every_update
