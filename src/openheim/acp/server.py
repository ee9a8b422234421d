"""The ACP agent: protocol requests mapped onto the library ``Runtime``.

``serve_acp(reader, writer, runtime)`` speaks ACP over any pair of byte streams: stdio
(``openheim acp``), a socket, an in-memory pipe, a WebSocket bridge. Each ACP session is an
``Session`` of the runtime; a prompt turn is a translation of its events (``turn.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.agent.connection import AgentSideConnection
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CloseSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from openheim._version import __version__
from openheim.acp import options
from openheim.acp.blocks import prompt_message
from openheim.acp.client_io import AcpClientIO
from openheim.acp.commands import available_commands, command_of, run_command
from openheim.acp.elsewhere import Elsewhere
from openheim.acp.errors import busy, request_error
from openheim.acp.mcp import mcp_servers
from openheim.acp.notices import AgentMessages, own_folders
from openheim.acp.params import absolute_cwd, meta_list, meta_text, page_cursor
from openheim.acp.permissions import PermissionAsker
from openheim.acp.translate import event_update, replay_updates
from openheim.acp.transport import LineTransport
from openheim.acp.turn import Turn
from openheim.config.schema import DEFAULT_CLIENT_MCP_SERVERS, McpServerEntry
from openheim.errors import OpenheimError
from openheim.events import Notice, TextDelta
from openheim.runtime import (
    Runtime,
    Session,
    SessionHost,
    SessionOptions,
    commands,
    prompt_commands,
)
from openheim.skills import SkillsManager, skills_for

log = logging.getLogger(__name__)

PAGE_SIZE = 50


@dataclass
class _Live:
    """An open ACP session: the runtime's session (kept open by the connection's
    ``SessionHost``), where it works, its client channels and its skills (offered as slash
    commands)."""

    session: Session
    cwd: Path
    io: AcpClientIO
    asker: PermissionAsker
    skills: SkillsManager


class OpenheimAgent:
    """The ``acp.Agent`` of one connection; ``elsewhere`` reaches the prompts of its sessions
    that other clients or replicas run (``openheim serve``'s ``/acp``)."""

    def __init__(self, runtime: Runtime, elsewhere: Elsewhere | None = None) -> None:
        self.runtime = runtime
        self._elsewhere = elsewhere
        self._conn: Client | None = None
        self._caps: ClientCapabilities | None = None
        self._live: dict[str, _Live] = {}
        self._sessions = SessionHost(runtime)
        self._background: set[asyncio.Task[None]] = set()
        acp = runtime.settings.acp
        self._client_mcp = acp.client_mcp_servers or DEFAULT_CLIENT_MCP_SERVERS

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        assert self._conn is not None  # set by the connection before any request
        return self._conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_: Any,
    ) -> InitializeResponse:
        self._caps = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_info=Implementation(name="openheim", title="Openheim", version=__version__),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=self._client_mcp != "none"),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse | None:
        raise RequestError.invalid_params(
            {"reason": f"openheim needs no authentication (asked for {method_id!r})"}
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **meta: Any,
    ) -> NewSessionResponse:
        live = await self._open(cwd, mcp_servers, None, meta)
        return NewSessionResponse(session_id=live.asker.session_id, **self._state(live))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> LoadSessionResponse:
        live = await self._open(cwd, mcp_servers, session_id, {})
        tools = live.session.agent.tools
        kinds = {tool.name: tool.capabilities.kind.value for tool in tools}
        for update in replay_updates(live.session.history, live.cwd, kinds):
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(**self._state(live))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **_: Any,
    ) -> ResumeSessionResponse:
        live = await self._open(cwd, mcp_servers, session_id, {})
        return ResumeSessionResponse(**self._state(live))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        folder = absolute_cwd(cwd) if cwd is not None else None
        before = page_cursor(cursor)
        records = self.runtime.list_sessions(cwd=folder, limit=PAGE_SIZE + 1, before=before)
        page = records[:PAGE_SIZE]
        more = len(records) > PAGE_SIZE
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r.id,
                    cwd=r.cwd,
                    title=r.title or None,
                    updated_at=datetime.fromtimestamp(r.updated_at, UTC).isoformat(),
                )
                for r in page
            ],
            next_cursor=repr(page[-1].updated_at) if more and page else None,
        )

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        self._get(session_id)
        del self._live[session_id]
        await self._sessions.close(session_id)
        return CloseSessionResponse()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **_: Any
    ) -> SetSessionModeResponse:
        options.set_mode(self._get(session_id).session, mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        live = self._get(session_id)
        options.set_option(self.runtime.settings, live.session, config_id, value)
        return SetSessionConfigOptionResponse(
            config_options=options.config_options(self.runtime.settings, live.session)
        )

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        live = self._get(session_id)
        message = prompt_message(prompt)
        try:
            message = prompt_commands.PromptCommands.of(self.runtime.settings, live.skills).expand(
                message
            )
        except OpenheimError as err:  # a template's missing argument
            raise request_error(err) from None
        if live.session.busy:
            raise busy(session_id)
        if (command := command_of(message)) is not None:
            return await self._command(session_id, live.session, command)
        folders = own_folders(self.runtime.settings)
        turn = Turn(self.conn, session_id, live.session, live.cwd, folders)
        try:
            stop = await turn.run(message)
        except OpenheimError as err:
            raise request_error(err) from None
        return PromptResponse(stop_reason=stop)

    async def _command(
        self, session_id: str, session: Session, command: commands.Invocation
    ) -> PromptResponse:
        """A registry command: done here, its outcome sent as the agent's message."""
        try:
            said = await run_command(command, session)
        except OpenheimError as err:
            raise request_error(err) from None
        update = event_update(TextDelta(said))
        assert update is not None
        await self.conn.session_update(session_id=session_id, update=update)
        return PromptResponse(stop_reason="end_turn")

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **_: Any,
    ) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Cancel the prompt of a session this connection opened: its own, or one that runs
        elsewhere (another client's, another replica's)."""
        live = self._live.get(session_id)
        if live is None:
            return
        if live.session.busy or self._elsewhere is None:
            live.session.cancel()
        else:
            self._elsewhere.cancel(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring extension notification %s", method)

    async def close(self) -> None:
        """Close every session of this connection (the connection ended)."""
        for task in list(self._background):
            task.cancel()
        self._live = {}
        await self._sessions.aclose()

    async def _open(
        self, cwd: str, servers: list[Any] | None, resume: str | None, meta: dict[str, Any]
    ) -> _Live:
        folder = absolute_cwd(cwd)
        if resume is not None and resume in self._live:
            old = self._live.pop(resume)
            if old.session.busy:
                self._live[resume] = old
                raise busy(resume)
            await self._sessions.close(resume)
        io = AcpClientIO(self.conn, "", self._caps)
        asker = PermissionAsker(self.conn, "")
        config = self.runtime.settings.home / "config.toml"
        client = mcp_servers(servers or [], self._client_mcp, config)
        sid, session = await self._start(folder, client.entries, resume, meta, io, asker)
        refused = [Notice(line, "warning", "mcp") for line in client.refused]
        for notice in [*session.notices, *refused]:  # the settings' own were logged at start-up
            if notice not in self.runtime.settings.notices:
                log.warning("%s", notice.message)
        io.session_id = asker.session_id = sid
        live = _Live(session, folder, io, asker, skills_for(self.runtime.settings))
        self._live[sid] = live
        self._announce(sid, live.skills, refused)
        return live

    async def _start(
        self,
        folder: Path,
        entries: dict[str, McpServerEntry],
        resume: str | None,
        meta: dict[str, Any],
        io: AcpClientIO,
        asker: PermissionAsker,
    ) -> tuple[str, Session]:
        """The session opened (or resumed) on the host, and the id the client knows it by."""
        if resume is not None:
            chosen = SessionOptions(resume=resume, cwd=folder, mcp_servers=entries)
        else:
            model, skills = meta_text(meta, "model"), tuple(meta_list(meta, "skills"))
            chosen = SessionOptions(skills=skills, model=model, cwd=folder, mcp_servers=entries)
        try:
            return await self._sessions.open(None, chosen, resolver=asker, client=io)
        except OpenheimError as err:
            raise request_error(err) from None

    def _announce(self, session_id: str, skills: SkillsManager, refused: list[Notice]) -> None:
        """Send the commands (``/compact``, skills, templates), then a notice for each of the
        client's MCP servers left out, once the response naming the session is out."""
        available = available_commands(
            prompt_commands.PromptCommands.of(self.runtime.settings, skills)
        )
        updates: list[Any] = [
            AvailableCommandsUpdate(
                session_update="available_commands_update", available_commands=available
            ),
            *map(AgentMessages(own_folders(self.runtime.settings)).notice, refused),
        ]
        task = asyncio.create_task(self._send_updates(session_id, updates))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_updates(self, session_id: str, updates: list[Any]) -> None:
        for update in updates:
            await self.conn.session_update(session_id=session_id, update=update)

    def _state(self, live: _Live) -> dict[str, Any]:
        """The session's modes and config options, as new, load and resume return them."""
        return {
            "modes": options.mode_state(live.session),
            "config_options": options.config_options(self.runtime.settings, live.session),
        }

    def _get(self, session_id: str) -> _Live:
        live = self._live.get(session_id)
        if live is None:
            raise RequestError(
                -32002,
                "Session not found",
                {"sessionId": session_id, "reason": "no open session has this id; "
                 "create one with session/new or open it with session/load"},
            )  # fmt: skip
        return live


async def serve_acp(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    runtime: Runtime,
    elsewhere: Elsewhere | None = None,
) -> None:
    """Serve ACP on one connection until the client closes its end; then close its sessions.
    ``elsewhere``: see ``OpenheimAgent``."""
    agent = OpenheimAgent(runtime, elsewhere)
    conn = AgentSideConnection(
        agent, LineTransport(reader, writer), listening=False, use_unstable_protocol=True
    )
    try:
        await conn.listen()
    finally:
        await agent.close()
        with contextlib.suppress(ConnectionError, OSError):
            await conn.close()
