"""What ACP adds to a prompt turn: the same scripted turn through the library and over ACP.

A turn is one prompt with ten tool rounds (a read-only tool, approval mode ``auto``) on a scripted
provider. The library run awaits ``Session.prompt()``; the ACP run sends ``session/prompt``
to ``serve_acp`` over a loopback socket pair, driven by the official SDK's client, which also
receives every ``session/update``. Both run in this process on the same runtime, so the
difference is the protocol: JSON-RPC framing, pydantic models, the notifications. Library and
ACP turns alternate (A B A B ...) on one session each, so a machine that gets busier or quieter
during the run affects both alike. Prints median and p90 per turn and the ratio.

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
from openheim.api import Runtime, Session
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


async def library_turn(session: Session, script: Script) -> float:
    """Seconds for one turn through the library."""
    script.refill()
    start = time.perf_counter()
    result = await session.prompt("go")
    elapsed = time.perf_counter() - start
    assert result.stop_reason == "end_turn"
    return elapsed


class AcpSession:
    """A session over ACP: ``serve_acp`` on one end of a socket pair, the SDK's client on the
    other."""

    async def open(self, runtime: Runtime, work: Path) -> None:
        agent_sock, client_sock = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=agent_sock)
        self.server = asyncio.create_task(serve_acp(reader, writer, runtime))
        c_reader, self.c_writer = await asyncio.open_connection(sock=client_sock)
        client: Any = QuietClient()  # a partial Client: it answers only what a turn sends
        self.conn = connect_to_agent(client, self.c_writer, c_reader, use_unstable_protocol=True)
        await self.conn.initialize(protocol_version=PROTOCOL_VERSION)
        self.sid = (await self.conn.new_session(cwd=str(work))).session_id

    async def turn(self, script: Script) -> float:
        """Seconds for one turn over ACP."""
        script.refill()
        start = time.perf_counter()
        response = await self.conn.prompt(session_id=self.sid, prompt=[text_block("go")])
        elapsed = time.perf_counter() - start
        assert response.stop_reason == "end_turn"
        return elapsed

    async def close(self) -> None:
        self.c_writer.close()
        await asyncio.wait_for(self.server, 30)


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
        session = await runtime.new_session()
        over_acp = AcpSession()
        await over_acp.open(runtime, work)
        for _ in range(3):  # warm up imports and caches
            await library_turn(session, script)
            await over_acp.turn(script)
        lib: list[float] = []
        acp: list[float] = []
        for _ in range(repeats):  # alternated: A B A B
            lib.append(await library_turn(session, script) * 1e3)
            acp.append(await over_acp.turn(script) * 1e3)
        await over_acp.close()
        await session.close()
    med_lib, med_acp = statistics.median(lib), statistics.median(acp)
    print(f"one prompt turn with {ROUNDS} tool rounds ({repeats} turns each)")
    print(f"  library : median {med_lib:7.2f} ms   p90 {percentile(lib, 0.9):7.2f} ms")
    print(f"  over ACP: median {med_acp:7.2f} ms   p90 {percentile(acp, 0.9):7.2f} ms")
    print(f"  ACP / library = {med_acp / med_lib:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=40)
    asyncio.run(main(parser.parse_args().repeats))
