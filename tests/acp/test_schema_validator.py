"""The schema validator itself: it must reject what the official ACP schema rejects and accept
what it accepts, or the ACP tests that lean on it prove nothing. The last tests run a tiny SDK
agent and check that the observer really sees (and passes) the messages on the wire."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import sys
from pathlib import Path
from typing import Any, cast

import jsonschema  # type: ignore[import-untyped]
import pytest
from acp import (
    PROTOCOL_VERSION,
    Agent,
    Client,
    RequestError,
    spawn_agent_process,
    text_block,
    update_agent_message,
)
from acp.agent.connection import AgentSideConnection
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.acp import schema
from tests.acp.schema import AgentMessageValidator, SchemaFetchError

JsonObject = dict[str, Any]


@pytest.fixture
def validator() -> AgentMessageValidator:
    """A fresh validator (the schema is fetched with npm on first use, then cached)."""
    return AgentMessageValidator()


def agent_text_chunk(kind: str = "agent_message_chunk") -> JsonObject:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "sess-1",
            "update": {"sessionUpdate": kind, "content": {"type": "text", "text": "hello"}},
        },
    }


def initialize_request(request_id: int = 0) -> JsonObject:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }


def initialize_response(request_id: int = 0, version: Any = 1) -> JsonObject:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "protocolVersion": version,
            "agentCapabilities": {"loadSession": False},
            "authMethods": [],
        },
    }


def permission_request(**params: Any) -> JsonObject:
    base: JsonObject = {
        "sessionId": "sess-1",
        "toolCall": {"toolCallId": "call-1", "title": "Write notes.md"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
    }
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "session/request_permission",
        "params": {k: v for k, v in {**base, **params}.items() if v is not None},
    }


def test_valid_session_update_passes(validator: AgentMessageValidator) -> None:
    validator.feed(agent_text_chunk(), from_agent=True)
    validator.assert_valid()
    assert validator.checked == 1
    assert validator.seen == {"notification session/update": 1}


def test_misspelled_session_update_kind_fails(validator: AgentMessageValidator) -> None:
    validator.feed(agent_text_chunk("agent_mesage_chunk"), from_agent=True)
    assert validator.checked == 1
    [error] = validator.errors
    assert "notification session/update" in error
    assert "SessionNotification" in error
    assert '"agent_mesage_chunk" is none of' in error
    assert "params.update" in error
    with pytest.raises(AssertionError, match="agent_mesage_chunk"):
        validator.assert_valid()


def test_initialize_response_passes_given_the_request(validator: AgentMessageValidator) -> None:
    validator.feed(initialize_request(), from_agent=False)
    validator.feed(initialize_response(), from_agent=True)
    validator.assert_valid()
    assert validator.seen == {"response initialize": 1}


def test_initialize_response_with_a_string_protocol_version_fails(
    validator: AgentMessageValidator,
) -> None:
    validator.feed(initialize_request(), from_agent=False)
    validator.feed(initialize_response(version="1"), from_agent=True)
    [error] = validator.errors
    assert "response to initialize id=0" in error
    assert "InitializeResponse" in error
    assert "result.protocolVersion" in error


def test_result_is_checked_against_the_method_of_its_request(
    validator: AgentMessageValidator,
) -> None:
    """The same result is fine for `initialize` but not for `session/new` (no sessionId)."""
    validator.feed({**initialize_request(3), "method": "session/new"}, from_agent=False)
    validator.feed(initialize_response(3), from_agent=True)
    [error] = validator.errors
    assert "response to session/new id=3" in error
    assert "'sessionId' is a required property" in error


def test_response_seen_before_its_request_is_checked_once_the_request_is_seen(
    validator: AgentMessageValidator,
) -> None:
    """The SDK tells observers about an outgoing request after sending it, so the answer can be
    observed first."""
    validator.feed(initialize_response(version="1"), from_agent=True)
    assert validator.errors == [
        "agent->client response id=0: answers no request the client sent (or answers one twice)"
    ]
    validator.feed(initialize_request(), from_agent=False)
    [error] = validator.errors
    assert "result.protocolVersion" in error


def test_duplicate_response_is_reported(validator: AgentMessageValidator) -> None:
    validator.feed(initialize_request(), from_agent=False)
    validator.feed(initialize_response(), from_agent=True)
    validator.feed(initialize_response(), from_agent=True)
    [error] = validator.errors
    assert "answers no request the client sent" in error


def test_error_responses_are_checked(validator: AgentMessageValidator) -> None:
    validator.feed({**initialize_request(1), "method": "session/load"}, from_agent=False)
    validator.feed({**initialize_request(2), "method": "session/load"}, from_agent=False)
    ok = {"code": -32601, "message": "Method not found: session/load"}
    validator.feed({"jsonrpc": "2.0", "id": 1, "error": ok}, from_agent=True)
    assert validator.errors == []
    validator.feed({"jsonrpc": "2.0", "id": 2, "error": {"code": "oops"}}, from_agent=True)
    [error] = validator.errors
    assert "response to session/load id=2: error does not match Error" in error
    assert validator.seen == {"error session/load": 2}


def test_permission_request_without_options_fails(validator: AgentMessageValidator) -> None:
    validator.feed(permission_request(), from_agent=True)
    assert validator.errors == []
    validator.feed(permission_request(options=None), from_agent=True)
    [error] = validator.errors
    assert "request session/request_permission id=7" in error
    assert "RequestPermissionRequest" in error
    assert "'options' is a required property" in error


def test_unknown_methods_fail_but_extension_methods_pass(
    validator: AgentMessageValidator,
) -> None:
    validator.feed({"jsonrpc": "2.0", "method": "session/updates", "params": {}}, from_agent=True)
    validator.feed({"jsonrpc": "2.0", "method": "_openheim/ping", "params": {}}, from_agent=True)
    validator.feed(
        {"jsonrpc": "2.0", "id": 1, "method": "_openheim/x", "params": {}}, from_agent=True
    )
    [error] = validator.errors
    assert "'session/updates' is not an agent->client notification" in error


def test_envelope_is_checked_against_the_agent_alternative(
    validator: AgentMessageValidator,
) -> None:
    validator.feed({**agent_text_chunk(), "jsonrpc": "1.0"}, from_agent=True)
    [error] = validator.errors
    assert "message does not match Agent" in error


def test_method_tables_come_from_the_schema(validator: AgentMessageValidator) -> None:
    requests = {m: d.definition for m, d in validator.request_defs.items()}
    assert requests["session/request_permission"] == "RequestPermissionRequest"
    assert requests["fs/read_text_file"] == "ReadTextFileRequest"
    assert requests["fs/write_text_file"] == "WriteTextFileRequest"
    assert requests["terminal/create"] == "CreateTerminalRequest"
    assert requests["terminal/output"] == "TerminalOutputRequest"
    assert requests["terminal/wait_for_exit"] == "WaitForTerminalExitRequest"
    assert requests["terminal/kill"] == "KillTerminalRequest"
    assert requests["terminal/release"] == "ReleaseTerminalRequest"
    assert validator.notification_defs["session/update"].definition == "SessionNotification"
    responses = {m: d.definition for m, d in validator.response_defs.items()}
    for method, definition in {
        "initialize": "InitializeResponse",
        "session/new": "NewSessionResponse",
        "session/load": "LoadSessionResponse",
        "session/list": "ListSessionsResponse",
        "session/prompt": "PromptResponse",
        "session/set_mode": "SetSessionModeResponse",
        "session/set_config_option": "SetSessionConfigOptionResponse",
        "session/resume": "ResumeSessionResponse",
        "session/close": "CloseSessionResponse",
    }.items():
        assert responses[method] == definition
    assert "session/fork" in validator.unstable_only_methods
    assert "session/prompt" not in validator.unstable_only_methods


def test_pinned_schemas_are_valid_json_schemas() -> None:
    """Guards the validator's premise: a broken schema could accept everything."""
    folder = schema.ensure_schema_files()
    for name in schema.SCHEMA_FILES:
        document = json.loads((folder / name).read_text())
        jsonschema.validators.validator_for(document).check_schema(document)


def test_missing_npm_fails_with_an_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without npm the schema tests must fail, not skip, and say what to install."""
    monkeypatch.setenv(schema.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(SchemaFetchError, match=r"npm was not found.*Install Node\.js 18\+"):
        AgentMessageValidator()
    assert not (tmp_path / "cache").exists()


def test_cache_dir_can_be_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(schema.CACHE_DIR_ENV, str(tmp_path))
    assert schema.schema_dir() == tmp_path / schema.SDK_VERSION


def test_observer_directions(validator: AgentMessageValidator) -> None:
    """On a client connection incoming messages are the agent's; on an agent one, outgoing."""
    validator.observer(StreamEvent(StreamDirection.OUTGOING, initialize_request()))
    validator.observer(StreamEvent(StreamDirection.INCOMING, initialize_response()))
    validator.agent_side_observer(StreamEvent(StreamDirection.INCOMING, initialize_request(1)))
    validator.agent_side_observer(StreamEvent(StreamDirection.OUTGOING, initialize_response(1)))
    validator.assert_valid()
    assert validator.seen == {"response initialize": 2}


class MiniAgent:
    """A tiny ACP agent on the SDK: initialize, session/new, and a prompt turn that streams a
    chunk and asks for permission. No session/load, so that answers with an error."""

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name="mini-agent", version="0.0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="sess-1")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        await self._conn.session_update(session_id, update_agent_message(text_block("hi")))
        option = PermissionOption(option_id="allow", name="Allow", kind="allow_once")
        call = ToolCallUpdate(tool_call_id="call-1", title="Write notes.md")
        await self._conn.request_permission(session_id=session_id, tool_call=call, options=[option])
        return PromptResponse(stop_reason="end_turn")


class MiniClient:
    """A client that records session updates and allows every tool call."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        chosen = AllowedOutcome(outcome="selected", option_id=options[0].option_id)
        return RequestPermissionResponse(outcome=chosen)


AGENT_SCRIPT = f"""
from __future__ import annotations
import asyncio
from typing import Any
from acp import PROTOCOL_VERSION, Client, run_agent, text_block, update_agent_message
from acp.schema import (
    Implementation, InitializeResponse, NewSessionResponse, PermissionOption, PromptResponse,
    ToolCallUpdate,
)

{inspect.getsource(MiniAgent)}

asyncio.run(run_agent(MiniAgent()))
"""


async def drive(conn: ClientSideConnection, cwd: Path) -> None:
    """One client conversation: handshake, a session, a prompt turn and a failing request."""
    init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
    assert init.protocol_version == PROTOCOL_VERSION
    session = await conn.new_session(cwd=str(cwd))
    reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    assert reply.stop_reason == "end_turn"
    with pytest.raises(RequestError):
        await conn.load_session(cwd=str(cwd), session_id="nope")


async def test_observer_validates_a_real_agent_process(tmp_path: Path) -> None:
    """The usage the openheim ACP tests follow: spawn the agent, observe the client side."""
    script = tmp_path / "mini_agent.py"
    script.write_text(AGENT_SCRIPT)
    validator = AgentMessageValidator()
    client = MiniClient()
    async with spawn_agent_process(
        cast(Client, client), sys.executable, str(script), observers=[validator.observer]
    ) as (conn, _process):
        await drive(conn, tmp_path)
    validator.assert_valid()
    assert len(client.updates) == 1
    assert validator.seen == {
        "response initialize": 1,
        "response session/new": 1,
        "notification session/update": 1,
        "request session/request_permission": 1,
        "response session/prompt": 1,
        "error session/load": 1,
    }
    assert validator.checked == 6


async def test_agent_side_observer_in_process(tmp_path: Path) -> None:
    """The same check from the agent's end of a loopback socket pair, without a process."""
    validator = AgentMessageValidator()
    agent_sock, client_sock = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
    client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
    agent_conn = AgentSideConnection(
        cast(Agent, MiniAgent()),
        agent_writer,
        agent_reader,
        observers=[validator.agent_side_observer],
    )
    client_conn = ClientSideConnection(cast(Client, MiniClient()), client_writer, client_reader)
    try:
        await drive(client_conn, tmp_path)
    finally:
        await client_conn.close()
        await agent_conn.close()
        for writer in (client_writer, agent_writer):
            writer.close()
            await writer.wait_closed()
    validator.assert_valid()
    assert validator.checked == 6
    assert validator.seen["notification session/update"] == 1
