"""An ACP client for the tests: records every update, answers permission requests from a script,
and offers real file and terminal access (subprocesses) when asked to advertise them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.stdio import spawn_agent_process

from openheim.testing import FakeLLMServer
from tests.acp.schema import AgentMessageValidator
from tests.cli.test_cli import configure, env_for

HOLD = "hold"
"""A permission answer that never comes (until the turn is cancelled)."""


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


class RecordingClient:
    """The editor side of the tests."""

    def __init__(
        self, *, answers: list[str] | None = None, fs: bool = False, terminal: bool = False
    ):
        self.answers = list(answers or [])
        self.fs = fs
        self.terminal = terminal
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[Any] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.terminals: dict[str, _Terminal] = {}
        self.released: list[str] = []
        self.asked = asyncio.Event()

    @property
    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs),
            terminal=self.terminal,
        )

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [
            u.session_update for sid, u in self.updates if session_id is None or sid == session_id
        ]

    def of_kind(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def notices(self, session_id: str | None = None) -> list[Any]:
        """The notices sent (message chunks marked in ``_meta``) to one session or all."""
        return [
            u
            for sid, u in self.updates
            if u.session_update == "agent_message_chunk"
            and (u.field_meta or {}).get("openheim", {}).get("notice") is not None
            and (session_id is None or sid == session_id)
        ]

    def text(self, session_id: str | None = None) -> str:
        """The agent's text to one session or all: its message chunks that are not notices."""
        notices = [id(u) for u in self.notices(session_id)]
        return "".join(
            u.content.text
            for sid, u in self.updates
            if u.session_update == "agent_message_chunk"
            and id(u) not in notices
            and (session_id is None or sid == session_id)
        )

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(tool_call)
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == HOLD:
            await asyncio.Event().wait()
        if answer == "error":
            raise RequestError.internal_error({"details": "the editor failed"})
        if answer == "garbage":
            return cast(RequestPermissionResponse, {"outcome": "yes please"})
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        self.calls.append(("fs/read_text_file", {"path": path}))
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.calls.append(("fs/write_text_file", {"path": path, "content": content}))
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None,
        env: list[EnvVariable] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **_: Any,
    ) -> CreateTerminalResponse:  # fmt: skip
        self.calls.append(("terminal/create", {"command": command, "args": args, "cwd": cwd}))
        environ = {**os.environ, **{var.name: var.value for var in env or []}}
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=environ, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        term = _Terminal(process)
        term.reader = asyncio.create_task(_pump(process, term.output))
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = term
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        self.calls.append(("terminal/wait_for_exit", {"terminal": terminal_id}))
        term = self.terminals[terminal_id]
        code = await term.process.wait()
        if term.reader is not None:
            await term.reader
        if code < 0:
            return WaitForTerminalExitResponse(signal=signal.Signals(-code).name)
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        self.calls.append(("terminal/output", {"terminal": terminal_id}))
        term = self.terminals[terminal_id]
        return TerminalOutputResponse(output=term.output.decode(), truncated=False)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> KillTerminalResponse:
        self.calls.append(("terminal/kill", {"terminal": terminal_id}))
        _kill(self.terminals[terminal_id].process)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> ReleaseTerminalResponse:
        self.calls.append(("terminal/release", {"terminal": terminal_id}))
        term = self.terminals[terminal_id]
        _kill(term.process)
        await term.process.wait()
        self.released.append(terminal_id)
        return ReleaseTerminalResponse()

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **_: Any
    ) -> CreateElicitationResponse:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **_: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


async def _pump(process: asyncio.subprocess.Process, into: bytearray) -> None:
    assert process.stdout is not None
    while chunk := await process.stdout.read(4096):
        into += chunk


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@dataclass
class Agent:
    """A running ``openheim acp`` and the connection to it."""

    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    validator: AgentMessageValidator
    work: Path

    async def start(self) -> Any:
        return await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=self.client.capabilities
        )

    async def new(self, **kwargs: Any) -> str:
        response = await self.conn.new_session(cwd=str(self.work), **kwargs)
        return str(response.session_id)


@contextlib.asynccontextmanager
async def acp_agent(
    home: Path,
    work: Path,
    server: FakeLLMServer | None,
    client: RecordingClient | None = None,
    *,
    args: tuple[str, ...] = (),
    extra: str = "",
    top: str = "",
    env: dict[str, str] | None = None,
) -> AsyncIterator[Agent]:
    """``openheim acp`` as a subprocess on a config that points at ``server``; ``extra`` goes
    in the provider's table, ``top`` before it (top-level keys); ``env`` adds environment
    variables (``OPENHEIM_MAX_ITERATIONS``, say)."""
    configure(home, server, extra=extra)
    if top:
        config = home / "config.toml"
        config.write_text(f"{top}\n{config.read_text()}")
    client = client or RecordingClient()
    validator = AgentMessageValidator()
    with (home / "acp-stderr.log").open("wb") as stderr:
        async with spawn_agent_process(
            client,
            sys.executable, "-m", "openheim", "acp", *args,
            env=env_for(home, **(env or {})),
            cwd=work,
            transport_kwargs={"stderr": stderr},
            observers=[validator.observer],
            use_unstable_protocol=True,
        ) as (conn, process):  # fmt: skip
            agent = Agent(conn, process, client, validator, work)
            yield agent
    validator.assert_valid()
