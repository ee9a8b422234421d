"""The ``openheim.api`` package, and ``Runtime`` built from keyword arguments."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import openheim
import openheim.api
import openheim.runtime
from openheim.api import OpenheimClient, Runtime, Session
from openheim.approval import ApprovalRequest
from openheim.config.load import DEFAULT_MAX_ITERATIONS
from openheim.config.providers import infer_kind
from openheim.config.schema import McpServerEntry
from openheim.errors import ConfigError
from openheim.events import ToolResult
from openheim.providers import known_kinds
from openheim.providers.base import ProviderSettings
from openheim.redaction.secrets import REDACTED, redact
from openheim.runtime.settings import McpServers
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.decorator import tool
from tests.api.conftest import MODEL, MakeRuntime, Scripted
from tests.api.support import secret_key

HEAVY = ("httpx", "httpx_sse", "pydantic", "anyio", "mcp", "openheim.providers.openai_chat")


# --- the package ------------------------------------------------------------------------------


def test_importing_the_api_has_no_side_effects(tmp_path: Path) -> None:
    place = tmp_path / "import"
    place.mkdir()
    home = place / "openheim-home"
    script = (
        "import sys, json\n"
        "import openheim.providers as p\n"
        "kinds = sorted(p.known_kinds())\n"
        "import openheim.api\n"
        "print(json.dumps({'modules': sorted(sys.modules), 'kinds': kinds,"
        " 'after': sorted(p.known_kinds())}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "OPENHEIM_HOME": str(home), "HOME": str(place)},
        cwd=place,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert not set(found["modules"]) & set(HEAVY), sorted(set(found["modules"]) & set(HEAVY))
    assert found["after"] == found["kinds"]  # no provider kind registered by the import
    assert list(place.iterdir()) == []  # nothing written, not even the home folder
    assert out.stderr == ""


def test_openheim_client_is_runtime() -> None:
    assert OpenheimClient is Runtime
    assert set(openheim.api.__all__) == {
        "AgentSession",
        "ApprovalCallback",
        "OpenheimClient",
        "PromptResult",
        "PromptRun",
        "Runtime",
        "Session",
    }
    for name in set(openheim.api.__all__) - {"AgentSession"}:
        assert getattr(openheim.api, name) is not None


def test_agent_session_is_a_deprecated_alias_of_session() -> None:
    with pytest.warns(DeprecationWarning, match="openheim.api.Session"):
        from openheim.api import AgentSession
    assert AgentSession is Session
    with pytest.warns(DeprecationWarning, match="AgentSession is deprecated"):
        assert openheim.api.AgentSession is openheim.runtime.Session
    assert openheim.Session is openheim.api.Session is Session


# --- keyword arguments ------------------------------------------------------------------------


def test_keyword_arguments_make_the_settings(scripted: Scripted, home: Path, work: Path) -> None:
    @tool(read_only=True)
    def ping() -> str:
        """Answer pong."""
        return "pong"

    runtime = Runtime(
        provider=scripted.kind,
        model=MODEL,
        data_dir=home,
        work_dir=work,
        tools=[ping],
        max_iterations=4,
        allow_shell=True,
        approval="auto",
        save_sessions=False,
    )
    s = runtime.settings
    assert (s.provider, s.model, s.data_dir, s.work_dir) == (scripted.kind, MODEL, home, work)
    assert (s.max_iterations, s.allow_shell, s.approval, s.save_sessions) == (
        4,
        True,
        "auto",
        False,
    )
    assert infer_kind(scripted.kind, s.providers[scripted.kind]) == scripted.kind
    assert s.providers[scripted.kind].default_model == MODEL
    assert s.sources == []
    assert runtime.tools == [ping]


def test_defaults_of_a_programmatic_runtime(scripted: Scripted, home: Path, work: Path) -> None:
    s = Runtime(provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work).settings
    assert (s.max_iterations, s.allow_shell, s.approval, s.save_sessions) == (
        DEFAULT_MAX_ITERATIONS,
        False,
        "ask",
        True,
    )
    assert (s.mcp_servers, s.default_skills) == ({}, [])


def test_no_config_file_or_variable_is_read(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "config.toml").write_text("max_iterations = 3\nallow_shell = true\n")
    monkeypatch.setenv("OPENHEIM_MAX_ITERATIONS", "7")
    monkeypatch.setenv("OPENHEIM_MODEL", "from-env")
    s = Runtime(provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work).settings
    assert (s.max_iterations, s.allow_shell, s.model) == (DEFAULT_MAX_ITERATIONS, False, MODEL)


def test_data_dir_and_work_dir_default_to_home_and_cwd(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    s = Runtime(provider=scripted.kind, model=MODEL).settings
    assert (s.data_dir, s.work_dir) == (home, work)


async def test_the_registered_factory_builds_the_provider(
    scripted: Scripted, make_runtime: MakeRuntime, home: Path
) -> None:
    key = secret_key()
    scripted.provider.add("hello")
    runtime = make_runtime(api_key=key, api_base="http://127.0.0.1:9/v1")
    async with await runtime.new_session() as session:
        assert (await session.prompt("hi")).text == "hello"
    (built,) = scripted.built
    assert isinstance(built, ProviderSettings)
    assert (built.name, built.kind, built.model) == (scripted.kind, scripted.kind, MODEL)
    assert (built.api_key, built.api_base, built.data_dir) == (key, "http://127.0.0.1:9/v1", home)


async def test_registering_a_kind_again_replaces_its_factory(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    other = ScriptedProvider(["from the replacement"])
    Runtime.register_provider(scripted.kind, lambda settings, client: other)
    assert scripted.kind in known_kinds()
    async with await make_runtime().new_session() as session:
        assert (await session.prompt("hi")).text == "from the replacement"
    assert scripted.requests == []


async def test_the_api_key_is_a_registered_secret(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    key = secret_key()
    assert redact(f"key={key}") == f"key={key}"  # not a known key format
    runtime = make_runtime(api_key=key)
    assert redact(f"key={key}") == f"key={REDACTED}"
    assert runtime.settings.providers[scripted.kind].api_key == key

    @tool(read_only=True)
    def leak() -> str:
        """Print the key."""
        return f"the key is {key}"

    runtime.add_tool(leak)
    scripted.provider.add(Reply(tool_calls=[tool_call("leak")]), "ok")
    async with await runtime.new_session() as session:
        result = await session.prompt("leak it")
    (leaked,) = (e for e in result.events if isinstance(e, ToolResult))
    assert key not in leaked.content
    assert REDACTED in leaked.content
    assert key not in repr(scripted.requests[1].messages)


@pytest.mark.parametrize(
    "given", [{"api_key": "k" * 20}, {"api_base": "http://127.0.0.1:1/v1"}], ids=["key", "base"]
)
def test_an_endpoint_without_a_provider_is_refused(work: Path, given: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="need a provider"):
        Runtime(work_dir=work, **given)  # type: ignore[arg-type]


def test_an_unknown_provider_name_means_an_openai_compatible_server(work: Path) -> None:
    name = f"myserver-{uuid.uuid4().hex[:6]}"
    s = Runtime(provider=name, model="m", api_base="http://127.0.0.1:1/v1", work_dir=work).settings
    entry = s.providers[name]
    assert (entry.kind, entry.api_base, entry.default_model) == (None, "http://127.0.0.1:1/v1", "m")


@pytest.mark.parametrize("mode", ["ask", "edits", "auto", "deny"])
def test_approval_modes(scripted: Scripted, work: Path, mode: str) -> None:
    assert (
        Runtime(provider=scripted.kind, model=MODEL, work_dir=work, approval=mode).settings.approval
        == mode
    )


@pytest.mark.parametrize("mode", ["yolo", "", "ASK"])
def test_an_unknown_approval_mode_is_refused(scripted: Scripted, work: Path, mode: str) -> None:
    with pytest.raises(ConfigError, match="approval must be one of"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=work, approval=mode)


def test_an_approval_callback_means_ask_mode(scripted: Scripted, work: Path) -> None:
    def callback(request: ApprovalRequest) -> bool:
        return True

    runtime = Runtime(provider=scripted.kind, model=MODEL, work_dir=work, approval=callback)
    assert runtime.settings.approval == "ask"


def test_a_missing_work_dir_is_refused(scripted: Scripted, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=tmp_path / "nowhere")


def test_a_file_as_work_dir_or_data_dir_is_refused(scripted: Scripted, tmp_path: Path) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    with pytest.raises(ConfigError, match=r"work_dir .* is not a folder"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=file)
    with pytest.raises(ConfigError, match=r"data_dir .* is not a folder"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=tmp_path, data_dir=file)


async def test_a_missing_data_dir_is_created(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    data = tmp_path / "new" / "data"
    scripted.provider.add("stored")
    runtime = make_runtime(data_dir=data)
    assert runtime.settings.data_dir == data
    async with await runtime.new_session() as session:
        await session.prompt("hi")
    assert data.is_dir()
    assert [r.id for r in runtime.list_sessions()] == [session.id]


@pytest.mark.parametrize("bad", [0, -1])
def test_max_iterations_must_be_positive(scripted: Scripted, work: Path, bad: int) -> None:
    with pytest.raises(ConfigError, match="max_iterations"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=work, max_iterations=bad)


async def test_max_iterations_limits_a_run(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    @tool(read_only=True)
    def again(n: int) -> str:
        """Go on."""
        return "again"

    scripted.provider.add(*(Reply(tool_calls=[tool_call("again", {"n": n})]) for n in range(2)))
    async with await make_runtime(tools=[again], max_iterations=2).new_session() as session:
        result = await session.prompt("loop")
    assert (result.stop_reason, result.reason) == ("max_turn_requests", "max_iterations")
    assert len(scripted.requests) == 2


async def test_allow_shell_offers_the_shell(scripted: Scripted, make_runtime: MakeRuntime) -> None:
    scripted.provider.add("a", "b")
    async with await make_runtime().new_session() as session:
        await session.prompt("hi")
    async with await make_runtime(allow_shell=True).new_session() as session:
        await session.prompt("hi")
    assert "execute_command" not in scripted.tool_names(0)
    assert "execute_command" in scripted.tool_names(1)


def test_mcp_servers_as_plain_mappings_become_entries(scripted: Scripted, work: Path) -> None:
    given = McpServerEntry(url="http://127.0.0.1:1/mcp")
    servers: McpServers = {
        "local": {"command": "python3", "args": ["-m", "server"], "env": {"A": "1"}},
        "remote": {"url": "http://127.0.0.1:2/mcp", "call_timeout": 5},
        "entry": given,
    }
    s = Runtime(provider=scripted.kind, model=MODEL, work_dir=work, mcp_servers=servers).settings
    assert s.mcp_servers["local"] == McpServerEntry(
        command="python3", args=["-m", "server"], env={"A": "1"}
    )
    assert s.mcp_servers["remote"] == McpServerEntry(url="http://127.0.0.1:2/mcp", call_timeout=5)
    assert s.mcp_servers["entry"] is given


@pytest.mark.parametrize(
    "raw",
    [{"comand": "python3"}, {"command": "python3", "args": "not a list"}, {"url": 5}],
    ids=["unknown-key", "args-type", "url-type"],
)
def test_a_bad_mcp_server_is_refused_by_name(
    scripted: Scripted, work: Path, raw: dict[str, object]
) -> None:
    servers: McpServers = {"fine": {"command": "python3"}, "the-bad-one": raw}
    with pytest.raises(ConfigError, match="MCP server 'the-bad-one'"):
        Runtime(provider=scripted.kind, model=MODEL, work_dir=work, mcp_servers=servers)
