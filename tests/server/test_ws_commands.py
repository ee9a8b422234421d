"""Skill and template commands typed on the web page (``/ws`` prompts) reach the model
expanded, the same request the REPL sends (``tests/prompt_commands.py``); ``compact``, ``pin``
and ``undo`` are the registry's commands."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.prompt_commands import SENT, TYPED, install
from tests.server.support import served


async def test_skill_and_template_prompts_are_expanded(home: Path, work: Path) -> None:
    install(home)
    with FakeLLMServer(["one", "two"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            for text in TYPED:
                await ws.call("agent", type="prompt", session_id=sid, text=text)
                await ws.events_until_finished(sid)
            missing = await ws.call("agent", type="prompt", session_id=sid, text="/fix no lang")
    assert [r.body["messages"][-1]["content"] for r in llm.requests] == list(SENT)
    assert missing["type"] == "error" and "needs the argument lang" in missing["message"]
