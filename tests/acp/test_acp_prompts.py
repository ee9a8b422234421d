"""The prompts library over ACP: templates advertised as slash commands (an untrusted
project's marked so), expanded exactly as ``run --template`` expands them, and a missing
argument refused with the same error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.helpers import text_block

from openheim.testing import FakeLLMServer
from tests.acp.harness import RecordingClient, acp_agent
from tests.cli.test_cli import configure, openheim
from tests.prompt_commands import SENT, TYPED, install

REVIEW = "---\ndescription: Review code\narguments: lang, focus=bugs\n---\n"
REVIEW += "Review this {{lang}} code for {{focus}}:\n\n{{input}}\n"


async def _commands(client: RecordingClient) -> Any:
    """The first ``available_commands_update`` (sent right after the session's response)."""
    for _ in range(200):
        found = client.of_kind("available_commands_update")
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no available_commands_update arrived")


def _library(home: Path, work: Path) -> None:
    (home / "prompts").mkdir()
    (home / "prompts" / "review.md").write_text(REVIEW)
    (home / "prompts" / "plain.md").write_text("no placeholders here")
    (work / ".git").mkdir()
    theirs = work / ".openheim" / "prompts"
    theirs.mkdir(parents=True)
    (theirs / "theirs.md").write_text("---\ndescription: from the repo\n---\nDo {{input}}")


async def test_templates_are_slash_commands_expanded_as_run_does(home: Path, work: Path) -> None:
    _library(home, work)
    with FakeLLMServer(["ok", "done"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            commands = await _commands(agent.client)
            text = "/review lang=Python def f(): pass"
            await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
            await agent.conn.prompt(session_id=sid, prompt=[text_block("/theirs the dishes")])
            with pytest.raises(RequestError) as missing:
                await agent.conn.prompt(session_id=sid, prompt=[text_block("/review code")])
    offered = {c.name: c.description for c in commands.available_commands}
    assert list(offered) == ["compact", "pin", "undo", "review", "theirs"]  # "plain" is no template
    assert offered["review"] == "Review code"
    assert offered["theirs"] == "from the repo (untrusted project prompt)"
    users = [str(r.messages[-1]["content"]) for r in server.requests]
    assert users == ["Review this Python code for bugs:\n\ndef f(): pass", "Do the dishes"]
    assert missing.value.code == -32602 and "needs the argument lang" in str(missing.value.data)


def test_run_template_sends_the_same_message(home: Path, work: Path) -> None:
    _library(home, work)
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        done = openheim(
            "run", "--template", "review", "--arg", "lang=Python", "def f(): pass",
            home=home, cwd=work,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert server.requests[0].messages[-1]["content"] == (
        "Review this Python code for bugs:\n\ndef f(): pass"
    )


async def test_skill_and_template_commands_send_what_the_repl_sends(home: Path, work: Path) -> None:
    install(home)
    with FakeLLMServer(["one", "two"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            for text in TYPED:
                await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
    assert [r.messages[-1]["content"] for r in server.requests] == list(SENT)
