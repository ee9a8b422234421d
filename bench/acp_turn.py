"""What ACP adds to a prompt turn: the same scripted turn through the library and over ACP.

A turn is one prompt with ten tool rounds (a read-only tool, approval mode ``auto``) on a scripted
provider. The library run awaits ``AgentSession.prompt()``; the ACP run sends ``session/prompt``
to ``serve_acp`` over a loopback socket pair, driven by the official SDK's client, which also
receives every ``session/update``. Both run in this process on the same runtime, so the
difference is the protocol: JSON-RPC framing, pydantic models, the notifications. Prints median
and p90 per turn and the ratio.

    .venv/bin/python bench/acp_turn.py [--repeats 40]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent
from acp.helpers import text_block

from openheim.acp.server import serve_acp
from openheim.api import Runtime
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolKind
from openheim.tools.decorator import tool

ROUNDS = 10


@tool(read_only=True, kind=ToolKind.READ)
async def noop(n: int) -> str:
    """Return the number."""
    return str(n)


class Script:
    """One provider whose script is refilled before each turn."""

    def __init__(self) -> None:
        self.provider = ScriptedProvider()

    def refill(self) -> None:
        steps = [Reply(tool_calls=[tool_call("noop", {"n": i})]) for i in range(ROUNDS)]
        self.provider.add(*steps, Reply("done"))


class QuietClient:
    """An ACP client that counts updates and allows nothing (nothing asks in auto mode)."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("nothing should ask in auto mode")

    def on_connect(self, conn: Any) -> None:
        return None


async def library_turns(runtime: Runtime, script: Script, repeats: int) -> list[float]:
    session = await runtime.new_session()
    times = []
    for _ in range(repeats):
        script.refill()
        start = time.perf_counter()
        result = await session.prompt("go")
        times.append(time.perf_counter() - start)
        assert result.stop_reason == "end_turn"
    await session.close()
    return times


async def acp_turns(runtime: Runtime, script: Script, repeats: int, work: Path) -> list[float]:
    agent_sock, client_sock = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=agent_sock)
    server = asyncio.create_task(serve_acp(reader, writer, runtime))
    c_reader, c_writer = await asyncio.open_connection(sock=client_sock)
    client = QuietClient()
    conn = connect_to_agent(client, c_writer, c_reader, use_unstable_protocol=True)  # type: ignore[arg-type]
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    sid = (await conn.new_session(cwd=str(work))).session_id
    times = []
    for _ in range(repeats):
        script.refill()
        start = time.perf_counter()
        response = await conn.prompt(session_id=sid, prompt=[text_block("go")])
        times.append(time.perf_counter() - start)
        assert response.stop_reason == "end_turn"
    c_writer.close()
    await asyncio.wait_for(server, 30)
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(repeats: int) -> None:
    script = Script()
    Runtime.register_provider("bench-scripted", lambda settings, client: script.provider)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        runtime = Runtime(
            provider="bench-scripted",
            model="m",
            tools=[noop],
            work_dir=work,
            data_dir=work / "data",
            approval="auto",
            max_iterations=ROUNDS + 1,
            save_sessions=False,
        )
        await library_turns(runtime, script, 3)  # warm up imports and caches
        lib = [t * 1e3 for t in await library_turns(runtime, script, repeats)]
        acp = [t * 1e3 for t in await acp_turns(runtime, script, repeats, work)]
    med_lib, med_acp = statistics.median(lib), statistics.median(acp)
    print(f"one prompt turn with {ROUNDS} tool rounds ({repeats} turns each)")
    print(f"  library : median {med_lib:7.2f} ms   p90 {percentile(lib, 0.9):7.2f} ms")
    print(f"  over ACP: median {med_acp:7.2f} ms   p90 {percentile(acp, 0.9):7.2f} ms")
    print(f"  ACP / library = {med_acp / med_lib:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=40)
    asyncio.run(main(parser.parse_args().repeats))
