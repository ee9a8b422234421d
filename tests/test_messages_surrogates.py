"""A lone surrogate (valid in JSON as ``\\ud800``, or an undecodable byte kept by Python as
``\\udce9``) never poisons a session: a prompt holding one, from the library, ``/ws`` or ACP,
reaches the history and the model with U+FFFD in its place; a session whose stored history
already holds one (written before, or sent by a model) goes on answering prompts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.cliagents.argv import MODEL
from openheim.cliagents.parse import CliOutcome
from openheim.cliagents.run import CliRequest, run_cli
from openheim.cliagents.spec import CLAUDE
from openheim.messages import Message, TextBlock
from openheim.providers.base import ModelRequest, ProviderSettings
from openheim.providers.llama_cpp import LlamaCppProvider
from openheim.store.sqlite import open_store
from openheim.testing import FakeLLMServer, FakeReply
from openheim.testing.fake_replies import RecordedRequest
from tests.acp.test_acp_wire import RawAgent
from tests.cli.test_cli import configure, env_for
from tests.cliagents.standin import echo_script
from tests.providers.support import drain
from tests.server.support import served

LONE = {
    "high surrogate": ("caf\ud800", "caf\ufffd"),
    "low surrogate": ("\udfff end", "\ufffd end"),
    "escaped byte": ("caf\udce9", "caf\ufffd"),
    "a pair kept": ("ok \U0001f600", "ok \U0001f600"),
}


def contents(request: RecordedRequest) -> list[str]:
    return [str(message["content"]) for message in request.messages]


@pytest.fixture
def runtime_for(
    home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[FakeLLMServer], Runtime]:
    """A runtime from a config pointing at ``llm``, in the test's own home."""
    for name in [n for n in os.environ if n.startswith("OPENHEIM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENHEIM_HOME", str(home))

    def make(llm: FakeLLMServer) -> Runtime:
        configure(home, llm)
        return Runtime.from_config(cwd=work)

    return make


@pytest.mark.parametrize(("sent", "seen"), LONE.values(), ids=LONE.keys())
async def test_a_library_prompt_enters_the_history_as_valid_text(
    home: Path, runtime_for: Callable[[FakeLLMServer], Runtime], sent: str, seen: str
) -> None:
    with FakeLLMServer([FakeReply(text="one"), FakeReply(text="two")]) as llm:
        runtime = runtime_for(llm)
        async with await runtime.new_session() as session:
            assert (await session.prompt(sent)).text == "one"
            assert session.history[0] == Message.user(seen)
            assert (await session.prompt("again")).text == "two"
        assert session.id is not None
        stored = runtime.shared.borrow_store(home).messages(session.id)
        await runtime.aclose()
        requests = llm.requests
    assert stored[0] == Message.user(seen)
    assert contents(requests[0])[-1] == seen
    assert contents(requests[1])[-3] == seen


@pytest.mark.parametrize(
    "poison",
    [
        Message.user("caf\udce9"),
        Message("assistant", (TextBlock("half \ud800 a pair"),)),
    ],
    ids=["user prompt", "model answer"],
)
async def test_a_stored_session_holding_a_lone_surrogate_still_answers(
    home: Path,
    work: Path,
    runtime_for: Callable[[FakeLLMServer], Runtime],
    poison: Message,
) -> None:
    with FakeLLMServer([FakeReply(text="still here")]) as llm:
        runtime = runtime_for(llm)
        with open_store(home) as store:
            record = store.create(cwd=str(work), provider="fake", model="fake-model")
            store.append(record.id, Message.user("first"))
            store.append(record.id, poison)
        async with await runtime.resume_session(record.id) as session:
            result = await session.prompt("go on")
        await runtime.aclose()
        [request] = llm.requests
    assert result.text == "still here"
    assert "\ufffd" in json.dumps(request.messages, ensure_ascii=False)


async def test_a_model_answer_with_a_lone_surrogate_does_not_stop_the_next_prompt(
    runtime_for: Callable[[FakeLLMServer], Runtime],
) -> None:
    with FakeLLMServer([FakeReply(text="half \ud800 a pair"), FakeReply(text="fine")]) as llm:
        runtime = runtime_for(llm)
        async with await runtime.new_session() as session:
            await session.prompt("say it")
            assert (await session.prompt("and now?")).text == "fine"
        await runtime.aclose()
        requests = llm.requests
    assert contents(requests[1])[-2] == "half \ufffd a pair"


@pytest.mark.parametrize(("sent", "seen"), LONE.values(), ids=LONE.keys())
async def test_a_ws_prompt_with_a_lone_surrogate_runs(
    home: Path, work: Path, sent: str, seen: str
) -> None:
    with FakeLLMServer([FakeReply(text="one"), FakeReply(text="two")]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            for text in (sent, "again"):
                await ws.call("agent", type="prompt", session_id=sid, text=text)
                events = await ws.events_until_finished(sid)
                assert events[-1]["event"]["type"] == "finished", events[-1]
        requests = llm.requests
    assert contents(requests[0])[-1] == seen
    assert contents(requests[1])[-3] == seen


@pytest.mark.parametrize(("sent", "seen"), LONE.values(), ids=LONE.keys())
async def test_an_acp_prompt_with_a_lone_surrogate_runs(
    home: Path, work: Path, sent: str, seen: str
) -> None:
    with FakeLLMServer([FakeReply(text="one"), FakeReply(text="two")]) as llm:
        configure(home, llm)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "openheim", "acp", cwd=work, env=env_for(home),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        agent = RawAgent(process)
        try:
            await agent.request("initialize", {"protocolVersion": 1})
            new = await agent.request("session/new", {"cwd": str(work), "mcpServers": []})
            sid = new["result"]["sessionId"]
            answers = [
                await agent.request(
                    "session/prompt",
                    {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
                )
                for text in (sent, "again")
            ]
        finally:
            assert process.stdin is not None
            process.stdin.close()
            await asyncio.wait_for(process.wait(), 30)
        requests = llm.requests
    assert [a.get("result", a.get("error")) for a in answers] == [{"stopReason": "end_turn"}] * 2
    assert contents(requests[0])[-1] == seen
    assert contents(requests[1])[-3] == seen


async def test_a_cli_agent_is_sent_a_lone_surrogate_as_a_replacement_mark(tmp_path: Path) -> None:
    request = CliRequest(CLAUDE, str(echo_script(tmp_path)), "caf\udce9", tmp_path, MODEL)
    outcomes = [item async for item in run_cli(request) if isinstance(item, CliOutcome)]
    assert [outcome.text for outcome in outcomes] == ["echo 4 caf\ufffd"]


async def test_the_local_model_is_sent_a_lone_surrogate_as_a_replacement_mark() -> None:
    settings = ProviderSettings(
        "local", "llama_cpp", "", "SmolLM2-135M-Instruct", temperature=0.0, seed=7, n_ctx=2048
    )
    provider = LlamaCppProvider(settings)
    history = (Message.user("caf\udce9"), Message("assistant", (TextBlock("\ud800"),)))
    try:
        request = ModelRequest("SmolLM2-135M-Instruct", (*history, Message.user("hi")))
        _, response = await drain(provider, replace(request, max_tokens=4))
    finally:
        await provider.aclose()
    assert response.finish in ("end_turn", "max_tokens")
