"""The headless refusal on every surface that answers approvals with no person present:
``openheim run`` and the plain REPL with no terminal, ``openheim mcp serve`` for a client
without elicitation, and the chat gateway. The same write is refused with the same words to
the model, and the answer is followed by the same closing lines (how to let the call run, then
the warning that the answer may describe refused work); only how to switch the approval mode
to auto is the surface's own."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from openheim.runtime.headless import AUTO_FLAG, AUTO_GATEWAY
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.mcp_server.test_prompt_tool import text_of
from tests.parity.drivers import opened
from tests.parity.script import DENIED, WRITE
from tests.tui.support import child_env, configure, run_openheim

ANSWER = "I wrote out.txt"
"""The model's answer after its write was refused: a claim the closing lines flag."""
RULE = "openheim permissions add 'allow path \"out.txt\"'"
TOLD = (
    "write_file needs approval (the approval mode is ask and no allow rule covers write_file) "
    "and there is no one to ask in this session.\n"
    "To let it run: run openheim in a terminal to be asked, {auto} or allow it with `" + RULE + "`."
)
"""What the model is told, on every headless surface."""
CLOSING = (
    "1 tool call needed approval and no one could be asked. To let such calls run: "
    "run openheim in a terminal to be asked or {auto}, or add this rule:",
    f"  {RULE}",
    "1 tool call was denied; the answer above may describe work that was refused",
)
"""The lines after the answer, on every headless surface (a terminal's start "openheim: ")."""

Said = Callable[[Path, Path, FakeLLMServer], Awaitable[str]]


async def run(home: Path, work: Path, llm: FakeLLMServer) -> str:
    configure(home, llm)
    done = run_openheim(home, work, "run", WRITE)
    return done.stdout + done.stderr


async def repl(home: Path, work: Path, llm: FakeLLMServer) -> str:
    configure(home, llm)
    done = run_openheim(home, work, "chat", "--no-tui", typed=f"{WRITE}\n")
    return done.stdout + done.stderr


async def mcp_serve(home: Path, work: Path, llm: FakeLLMServer) -> str:
    """A real ``openheim mcp serve`` spoken to by the SDK's client, which offers no
    elicitation."""
    configure(home, llm)
    env = {**child_env(home), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "openheim", "mcp", "serve"], env=env, cwd=work
    )
    async with Client(params) as client:
        return text_of(await client.call_tool("openheim", {"prompt": WRITE}))


async def gateway(home: Path, work: Path, llm: FakeLLMServer) -> str:
    async with opened("gateway", home, work, llm) as driver:
        return await driver.run((WRITE,))


@pytest.mark.parametrize(
    ("said", "auto"),
    [
        pytest.param(run, AUTO_FLAG, id="run"),
        pytest.param(repl, AUTO_FLAG, id="repl"),
        pytest.param(mcp_serve, AUTO_FLAG, id="mcp serve"),
        pytest.param(gateway, AUTO_GATEWAY, id="gateway"),
    ],
)
async def test_every_headless_surface_refuses_and_warns_in_the_same_words(
    said: Said, auto: str, home: Path, work: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "out.txt", "content": "x\n"})
    with FakeLLMServer([FakeReply(tool_calls=[write]), ANSWER]) as llm:
        text = await said(home, work, llm)
        told = llm.requests[1].last_tool_result
    assert not (work / "out.txt").exists()
    assert told is not None and told.removeprefix(DENIED) == TOLD.format(auto=auto)
    lines = text.rstrip("\n").splitlines()
    assert ANSWER in text.rpartition(CLOSING[-1])[0]
    assert [line.removeprefix("openheim: ") for line in lines[-3:]] == [
        line.format(auto=auto) for line in CLOSING
    ]
