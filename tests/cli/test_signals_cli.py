"""Signals to ``openheim run``: SIGINT ends it with 130, SIGTERM with 143, promptly, wherever the
run is (streaming, waiting at a terminal approval question, opening its session), and the history
is repaired and saved either way."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openheim.loop import CANCELLED_RESULT
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.test_acp_wire import RawAgent
from tests.cli.test_approvals_cli import start_in_pty
from tests.cli.test_cli import configure, env_for, openheim, start_run
from tests.mcp.conftest import SERVER, tagged_pids

PROMPT_END = b"[c] cancel: "
STOP_WITHIN = 20.0
"""Seconds a signalled openheim may take to exit (it takes well under one)."""


def write_call() -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": "a.txt", "content": "x"})])


def signal_at_question(
    args: list[str], env: dict[str, str], cwd: Path, sig: int
) -> tuple[int, str]:
    """Run openheim on a pseudo-terminal, send ``sig`` once the approval question is shown, and
    return its exit status and everything it wrote; fails if it does not exit in time.

    The child is started by ``subprocess`` with a pty pair (no ``fork()`` of this threaded
    process) and takes the pty as its controlling terminal before it becomes openheim."""
    child, master = start_in_pty(args, env, cwd)
    output, signalled_at = b"", None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: every holder of the terminal has closed it
                    data = b""
                if not data:
                    break
                output += data
            if signalled_at is None and PROMPT_END in output:
                child.send_signal(sig)
                signalled_at = time.monotonic()
                deadline = signalled_at + STOP_WITHIN
        status = child.wait(timeout=max(deadline - time.monotonic(), 0.01))
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
    assert signalled_at is not None, output.decode(errors="replace")
    return status, output.decode(errors="replace")


def session_named(output: str) -> str:
    """The session id that ``openheim run`` printed."""
    return next(
        line.split()[-1] for line in output.splitlines() if line.startswith("openheim: session ")
    )


def stored_tool_results(home: Path, work: Path, session: str) -> list[str]:
    """The tool results stored in ``session``, read back with ``openheim sessions export``."""
    exported = openheim("sessions", "export", session, "--format", "json", home=home, cwd=work)
    assert exported.returncode == 0, exported.stderr
    messages = json.loads(exported.stdout)["messages"]
    blocks = [block for message in messages for block in message["content"]]
    return [block["content"] for block in blocks if block.get("kind") == "tool_result"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_at_the_approval_question_ends_the_run_and_saves_it(
    home: Path, work: Path, sig: int, code: int
) -> None:
    with FakeLLMServer([write_call(), "done"], default="done") as server:
        configure(home, server)
        status, output = signal_at_question(["run", "write it"], env_for(home), work, sig)
        assert len(server.requests) == 1  # stopped: the model was not asked again
    assert status == code, output
    assert "Allow openheim to write a.txt?" in output and "cancelled" in output
    assert not (work / "a.txt").exists()
    assert stored_tool_results(home, work, session_named(output)) == [CANCELLED_RESULT]


def test_sigterm_while_streaming_exits_143(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="never finishes", hang_at=2)]) as server:
        configure(home, server)
        proc = start_run(home, work, "hi")
        try:
            server.wait_for_requests(1, timeout=30)
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=STOP_WITHIN)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "cancelled" in err and "Traceback" not in err


def test_sigterm_while_the_session_opens_does_not_wait_for_it(home: Path, work: Path) -> None:
    tag = f"oh-sig-open-{os.getpid()}-{id(work)}"
    server_args = json.dumps([SERVER, "hang", tag])
    extra = (
        f"[mcp_servers.slow]\ncommand = {json.dumps(sys.executable)}\nargs = {server_args}\n"
        "startup_timeout = 120\n"
    )
    configure(home, None, extra=extra)
    proc = start_run(home, work, "hi")
    try:
        deadline = time.monotonic() + 30
        while not tagged_pids(tag):
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=STOP_WITHIN)  # not the 120 s start-up timeout
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, err
    assert "stopped before the prompt was sent" in err and "Traceback" not in err
    assert tagged_pids(tag) == []


def test_sigterm_before_the_run_starts_exits_143(home: Path, work: Path) -> None:
    configure(home, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "openheim", "run", "hi"],
        cwd=work,
        env=env_for(home),
        stdin=subprocess.PIPE,  # held open: openheim waits to read the piped prompt
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "pipe" not in Path(f"/proc/{proc.pid}/wchan").read_text():
            assert time.monotonic() < deadline, "openheim did not wait for its stdin"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=STOP_WITHIN)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err


async def start_acp(home: Path, work: Path) -> RawAgent:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "openheim", "acp"),
        cwd=work,
        env=env_for(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    return RawAgent(process)


async def agent_asks(agent: RawAgent, method: str) -> None:
    """Read the agent's messages until it sends a request for ``method``."""
    assert agent.process.stdout is not None
    while True:
        line = await asyncio.wait_for(agent.process.stdout.readline(), 30)
        assert line, "openheim acp closed stdout"
        if json.loads(line).get("method") == method:
            return


async def test_acp_ends_on_sigterm_while_the_editor_is_asked(home: Path, work: Path) -> None:
    """``openheim acp`` (whose stop by the editor is its normal end, exit 0) leaves a turn that
    waits on a permission request at once, with the history saved."""
    with FakeLLMServer([write_call(), "done"], default="done") as server:
        configure(home, server)
        agent = await start_acp(home, work)
        try:
            await agent.request("initialize", {"protocolVersion": 1})
            new = await agent.request("session/new", {"cwd": str(work), "mcpServers": []})
            session = new["result"]["sessionId"]
            params = {"sessionId": session, "prompt": [{"type": "text", "text": "write it"}]}
            prompt = {"jsonrpc": "2.0", "id": 99, "method": "session/prompt", "params": params}
            await agent.send_line(json.dumps(prompt))
            await agent_asks(agent, "session/request_permission")
            agent.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(agent.process.wait(), STOP_WITHIN)
        finally:
            if agent.process.returncode is None:
                agent.process.kill()
                await agent.process.wait()
    assert code == 0
    assert not (work / "a.txt").exists()
    assert stored_tool_results(home, work, session) == [CANCELLED_RESULT]
