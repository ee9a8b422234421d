"""Approvals of the ``openheim`` tool through the client's elicitation (accept, always,
decline), the run's usage and cost in its result, and the JSON-schema tools' schema from
``[mcp_server] schema``; a real ``openheim mcp serve`` driven by the MCP SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from openheim.runtime import approvals
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.mcp_server.conftest import ServeClient
from tests.mcp_server.test_http import TOKEN, HttpServer
from tests.mcp_server.test_prompt_tool import stored_sessions, text_of

WRITE = FakeToolCall("write_file", {"path": "a.txt", "content": "hello\n"})


class Answers:
    """An elicitation callback that answers with ``action`` (and ``decision``), recording
    each question."""

    def __init__(self, action: str, decision: str | None = None, reason: str = "") -> None:
        self.action = action
        self.decision = decision
        self.reason = reason
        self.asked: list[mcp_types.ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        self.asked.append(params)
        content = None if self.decision is None else {"decision": self.decision}
        if content is not None and self.reason:
            content["reason"] = self.reason
        return mcp_types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


async def call_with(
    home: Path, work: Path, answers: Answers | None, *args: str, mode: str = "legacy"
) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openheim", "mcp", "serve", *args],
        env={**env, "OPENHEIM_HOME": str(home)},
        cwd=work,
    )
    async with Client(params, elicitation_callback=answers, mode=mode) as client:
        return await client.call_tool("openheim", {"prompt": "write a.txt"})


def told(fake: FakeLLMServer, index: int) -> str:
    return str([m for m in fake.requests[index].messages if m.get("role") == "tool"][-1])


async def test_an_accepted_elicitation_lets_the_call_run(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="written"))
    answers = Answers("accept", "once")
    result = await call_with(home, work, answers)
    assert text_of(result).startswith("written"), text_of(result)
    assert "wrote 6 bytes to a.txt" in told(fake, 1)
    assert (work / "a.txt").read_text() == "hello\n"
    [question] = answers.asked
    assert isinstance(question, mcp_types.ElicitRequestFormParams)
    assert question.message.startswith("Allow openheim to write a.txt?\n")
    choice = question.requested_schema["properties"]["decision"]
    assert choice["enum"] == [c.id for c in approvals.CHOICES]


# The runtime's vocabulary with one choice more, then the form ``mcp serve`` would send.
FORM_WITH_A_NEW_CHOICE = """
import json
from mcp.server.elicitation import render_elicitation_schema
from openheim.runtime import approvals
later = approvals.Choice("later", "l", "ask me later", allow=False, always=False, told="later")
approvals.CHOICES = (*approvals.CHOICES, later)
from openheim.mcp_server.elicit import ApprovalAnswer
print(json.dumps(render_elicitation_schema(ApprovalAnswer)["properties"]["decision"]))
"""


def test_the_form_offers_the_vocabularys_choices_and_defines_none() -> None:
    """The elicitation form draws the runtime's approval choices (``runtime.approvals``): a
    choice the vocabulary gains is offered, with its label, without a change here."""
    done = subprocess.run(
        [sys.executable, "-c", FORM_WITH_A_NEW_CHOICE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["enum"] == [*(c.id for c in approvals.CHOICES), "later"]
    assert "later: ask me later" in decision["description"]


async def test_cancelling_the_call_while_it_asks_cancels_the_run(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="again"))
    asked, release = asyncio.Event(), asyncio.Event()

    async def slow(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.set()
        await asyncio.wait_for(release.wait(), 30)
        return mcp_types.ElicitResult(action="accept", content={"decision": "once"})

    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openheim", "mcp", "serve"],
        env={**env, "OPENHEIM_HOME": str(home)},
        cwd=work,
    )
    async with Client(params, elicitation_callback=slow, mode="legacy") as client:
        call = asyncio.create_task(client.call_tool("openheim", {"prompt": "write a.txt"}))
        await asyncio.wait_for(asked.wait(), 30)
        call.cancel()
        release.set()  # the answer comes too late: the run was cancelled
        [sid] = stored_sessions(home)
        again = await asyncio.wait_for(
            client.call_tool("openheim", {"prompt": "more", "session_id": sid}), 30
        )
    assert again.structured_content is not None
    assert again.structured_content["text"] == "again"
    assert not (work / "a.txt").exists()
    assert "cancelled" in told(fake, 1)


async def test_always_is_asked_once_for_the_session(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    again = FakeToolCall("write_file", {"path": "a.txt", "content": "again\n"})
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[again]), FakeReply(text="ok"))
    answers = Answers("accept", "always")
    result = await call_with(home, work, answers)
    assert text_of(result).startswith("ok")
    assert (work / "a.txt").read_text() == "again\n"
    assert len(answers.asked) == 1


async def test_a_declined_or_rejected_elicitation_refuses_the_call(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    for index, answers in enumerate([Answers("decline"), Answers("accept", "reject")]):
        fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="refused"))
        result = await call_with(home, work, answers)
        assert text_of(result).startswith("refused")
        assert not (work / "a.txt").exists()
        assert len(answers.asked) == 1
        reason = "did not approve" if index == 0 else "rejected this tool call"
        assert reason in told(fake, 2 * index + 1)


async def test_reject_always_with_a_reason_is_told_and_flagged(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(
        FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[WRITE]), FakeReply(text="I wrote it")
    )
    answers = Answers("accept", "reject_always", "write notes.md instead")
    result = await call_with(home, work, answers)
    assert not (work / "a.txt").exists()
    assert len(answers.asked) == 1  # the second call was refused by the learnt rule
    assert "will reject calls like it" in told(fake, 1)
    assert "saying: write notes.md instead" in told(fake, 1)
    assert text_of(result).endswith(
        "]\n2 tool calls were denied; the answer above may describe work that was refused"
    )


async def test_without_the_capability_the_call_is_refused_headless(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="refused"))
    result = await call_with(home, work, None)
    assert text_of(result).startswith("refused")
    assert not (work / "a.txt").exists()
    assert "no one to ask" in told(fake, 1)


async def test_a_connection_that_cannot_ask_during_a_call_fails_closed(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="refused"))
    answers = Answers("accept", "once")
    result = await call_with(home, work, answers, mode="auto")  # the 2026 protocol era
    assert text_of(result).startswith("refused")
    assert not (work / "a.txt").exists()
    assert answers.asked == []
    assert "no one to ask" in told(fake, 1)


async def test_the_result_reports_usage_and_cost(
    fake: FakeLLMServer, home: Path, work: Path
) -> None:
    with (home / "config.toml").open("a") as config:
        config.write('[prices."fake-model"]\ninput = 1000000.0\noutput = 2000000.0\n')
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="done"))
    result = await call_with(home, work, None, "--approve", "auto")
    structured = result.structured_content
    assert structured["usage"]["input_tokens"] == 20  # two model calls of 10 and 5 tokens
    assert structured["usage"]["output_tokens"] == 10
    assert structured["cost_usd"] == 20 * 1.0 + 10 * 2.0
    assert "20 input and 10 output tokens, $40.0000]" in text_of(result)


ORDER = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


async def test_the_schema_tools_use_the_configured_schema(serve: ServeClient, home: Path) -> None:
    (home / "order.json").write_text(json.dumps(ORDER))
    with (home / "config.toml").open("a") as config:
        config.write('[mcp_server]\nschema = "order.json"\n')
    async with serve() as client:
        bad = await client.call_tool("validate_json", {"data": {"id": "x"}})
        good = await client.call_tool("submit", {"data": {"id": 3}})
        example = await client.call_tool("json_example", {})
        own = await client.call_tool("validate_json", {"data": [], "schema": {"type": "array"}})
    assert bad.structured_content is not None and not bad.structured_content["valid"]
    assert "/id: 'x' is not of type 'integer'" in text_of(bad)
    assert good.structured_content == {"accepted": True, "data": {"id": 3}}
    assert example.structured_content == {"example": {"id": 0}}
    assert own.structured_content == {"valid": True, "errors": []}


async def test_without_a_configured_schema_a_call_must_pass_one(serve: ServeClient) -> None:
    async with serve() as client:
        result = await client.call_tool("validate_json", {"data": 1})
    assert result.is_error
    assert "no schema: pass `schema`, or set [mcp_server] schema" in text_of(result)


def test_a_bad_configured_schema_stops_the_server_at_start(home: Path, work: Path) -> None:
    (home / "bad.json").write_text('{"type": "no-such-type"}')
    with (home / "config.toml").open("a") as config:
        config.write('[mcp_server]\nschema = "bad.json"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    done = subprocess.run(
        [sys.executable, "-m", "openheim", "mcp", "serve"],
        env={**env, "OPENHEIM_HOME": str(home)},
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"[mcp_server] schema {home / 'bad.json'}: the schema is not valid" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def http_server(home: Path, work: Path) -> Iterator[HttpServer]:
    server = HttpServer(home, work, TOKEN)
    yield server
    server.stop()


async def test_an_elicitation_over_streamable_http(
    http_server: HttpServer, fake: FakeLLMServer, work: Path
) -> None:
    fake.add(FakeReply(tool_calls=[WRITE]), FakeReply(text="written"))
    answers = Answers("accept", "once")
    url = http_server.url()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    transport = streamable_http_client(url, http_client=http)
    async with Client(transport, elicitation_callback=answers, mode="legacy") as client:
        result = await client.call_tool("openheim", {"prompt": "write a.txt"})
    assert text_of(result).startswith("written"), text_of(result)
    assert (work / "a.txt").read_text() == "hello\n"
    assert len(answers.asked) == 1
