"""One driver per surface for the parity script: each opens the surface on a FakeLLMServer
the way a person or client would reach it, and runs a step's lines, returning what the
surface said meanwhile (answers, errors, refusals) as text.

The REPL is the real ``openheim chat`` over pipes (one process a step, as each step stands
alone); the terminal UI is the app under Textual's pilot; ACP is ``openheim acp`` spoken to by
the real SDK; ``/ws`` is the served app over a real WebSocket; the gateway is ``openheim
gateway`` against a fake Telegram Bot API on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

from acp import RequestError
from acp.helpers import text_block
from textual.pilot import Pilot

from openheim.chat.history import history_for
from openheim.config.load import Overrides, load_settings
from openheim.runtime import SessionOptions
from openheim.testing import FakeLLMServer
from openheim.tui.app import ChatApp
from openheim.tui.approval import ApprovalScreen
from tests.acp.harness import Agent, acp_agent
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.loopback import serving
from tests.gateway.support import running as gateway_running
from tests.gateway.test_telegram import ANN, ENV
from tests.parity.script import MODELS, WRITE
from tests.server.support import Socket, served, write_config
from tests.tui import drive
from tests.tui.support import configure, run_openheim

SWITCH = "/models "
"""A step line that switches the model: ACP and ``/ws`` do it with their own request."""
MODEL_LIST = f"models = [{', '.join(repr(m) for m in MODELS)}]".replace("'", '"')


class Driver(Protocol):
    """A surface, opened: ``run(lines)`` types a step's lines and returns what it said."""

    async def run(self, lines: tuple[str, ...]) -> str: ...


class Repl:
    """``openheim chat --no-tui`` over pipes, a fresh process for each step."""

    def __init__(self, home: Path, work: Path) -> None:
        self.home, self.work = home, work

    async def run(self, lines: tuple[str, ...]) -> str:
        typed = "".join(f"{line}\n" for line in lines)
        done = await asyncio.to_thread(
            run_openheim, self.home, self.work, "chat", "--no-tui", typed=typed
        )
        return done.stdout + done.stderr


class Tui:
    """The terminal UI under Textual's pilot; an approval question is answered "reject"."""

    def __init__(self, pilot: Pilot[int], app: ChatApp) -> None:
        self.pilot, self.app = pilot, app

    async def run(self, lines: tuple[str, ...]) -> str:
        before = drive.shown_text(self.app.conversation)
        for line in lines:
            await drive.type_line(self.pilot, self.app, line)
            if line == WRITE:
                await drive.wait_for(self.pilot, self._asking, "the approval question")
                await self.pilot.press("n")
            await drive.settle(self.pilot, self.app)
        shown = drive.shown_text(self.app.conversation)
        return shown[len(before) :] if shown.startswith(before) else shown

    def _asking(self) -> bool:
        return isinstance(self.app.screen, ApprovalScreen)


class Acp:
    """``openheim acp`` spoken to by the SDK's client; the model is the ``model`` config
    option; the client rejects every permission request."""

    def __init__(self, agent: Agent, session_id: str) -> None:
        self.agent, self.session_id = agent, session_id

    async def run(self, lines: tuple[str, ...]) -> str:
        said = []
        for line in lines:
            try:
                if line.startswith(SWITCH):
                    await self.agent.conn.set_config_option(
                        config_id="model", session_id=self.session_id, value=line[len(SWITCH) :]
                    )
                else:
                    await self.agent.conn.prompt(
                        session_id=self.session_id, prompt=[text_block(line)]
                    )
            except RequestError as err:
                said.append(f"{err} {err.data}")
        return "\n".join(said)


class Ws:
    """The ``/ws`` agent channel; the model is ``set_model``; an approval is answered
    ``reject``."""

    def __init__(self, ws: Socket, session_id: str) -> None:
        self.ws, self.sid = ws, session_id

    async def run(self, lines: tuple[str, ...]) -> str:
        said = []
        for line in lines:
            if line.startswith(SWITCH):
                reply = await self.ws.call(
                    "agent", type="set_model", session_id=self.sid, model=line[len(SWITCH) :]
                )
            else:
                reply = await self.ws.call("agent", type="prompt", session_id=self.sid, text=line)
            if reply["type"] == "error":
                said.append(str(reply["message"]))
                continue
            if line == WRITE:
                await self._reject()
            if not line.startswith(SWITCH):
                await self.ws.events_until_finished(self.sid)
        return "\n".join(said)

    async def _reject(self) -> None:
        asked = await self.ws.until(lambda d: d.get("type") == "approval_request")
        answer = {"approval_id": asked["data"]["approval_id"], "choice": "reject"}
        await self.ws.call("agent", type="approve", session_id=self.sid, **answer)


class Gateway:
    """``openheim gateway`` with Telegram: each line a private message; one reply each."""

    def __init__(self, fake: FakeTelegram) -> None:
        self.fake = fake

    async def run(self, lines: tuple[str, ...]) -> str:
        said = []
        for line in lines:
            count = len(self.fake.sent) + 1
            await self.fake.message(ANN, line)
            said.append((await self.fake.wait_sent(count, timeout=30))[count - 1].text)
        return "\n".join(said)


@contextlib.asynccontextmanager
async def opened(surface: str, home: Path, work: Path, llm: FakeLLMServer) -> AsyncIterator[Driver]:
    """``surface`` opened on ``llm`` (its provider offering ``MODELS``), for the script."""
    if surface == "repl":
        configure(home, llm)
        yield Repl(home, work)
    elif surface == "tui":
        configure(home, llm)
        env = {"OPENHEIM_HOME": str(home)}
        settings = load_settings(Overrides(approval="ask", work_dir=str(work)), cwd=work, env=env)
        app = ChatApp(settings, SessionOptions(), history_for(home), None)
        async with drive.running(app) as pilot:
            yield Tui(pilot, app)
    elif surface == "acp":
        async with acp_agent(home, work, llm, extra=MODEL_LIST + "\n") as agent:
            await agent.start()
            yield Acp(agent, await agent.new())
    elif surface == "ws":
        async with served(home, work, llm, models=MODELS) as server, server.socket() as ws:
            yield Ws(ws, (await ws.call("agent", type="open"))["session_id"])
    else:
        fake = FakeTelegram()
        async with serving(fake.app()) as url:
            gateway = f'[gateway]\n{MODEL_LIST}\n[gateway.telegram]\ntoken = "env:TG_TOKEN"\n'
            telegram = f'{gateway}api_base = "{url}"\nallowed_users = ["{ANN}"]\n'
            write_config(home, llm, telegram, models=MODELS)
            async with gateway_running(home, work, ("telegram",), ENV):
                yield Gateway(fake)
