"""``Runtime.from_config``: the config files, the environment and arguments laid over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.approval import ApprovalRequest
from openheim.config.schema import McpServerEntry
from openheim.errors import ConfigError
from openheim.events import ToolResult
from openheim.testing import Reply, tool_call
from openheim.tools.decorator import tool
from tests.api.conftest import Scripted
from tests.api.support import secret_key


def user_config(home: Path, kind: str, *, mcp: bool = True) -> None:
    """A user config.toml using ``kind``; with ``mcp``, an MCP server table (never started)."""
    server = '[mcp_servers.configured]\nurl = "http://127.0.0.1:1/mcp"\n' if mcp else ""
    (home / "config.toml").write_text(
        f"""
default_provider = "mine"
max_iterations = 7
approval = "auto"

[providers.mine]
kind = "{kind}"
default_model = "cfg-model"
models = ["cfg-model", "other-model"]

{server}"""
    )


def test_from_config_reads_the_user_config(scripted: Scripted, home: Path, work: Path) -> None:
    user_config(home, scripted.kind)
    s = Runtime.from_config(cwd=work).settings
    assert (s.provider, s.model, s.max_iterations, s.approval) == ("mine", None, 7, "auto")
    assert (s.work_dir, s.data_dir, s.home) == (work, home, home)
    assert s.sources == [home / "config.toml"]
    assert s.mcp_servers == {"configured": McpServerEntry(url="http://127.0.0.1:1/mcp")}


async def test_a_session_from_config_uses_the_configured_provider(
    scripted: Scripted, home: Path, work: Path
) -> None:
    user_config(home, scripted.kind, mcp=False)
    scripted.provider.add("configured")
    async with Runtime.from_config(cwd=work) as runtime:
        session = await runtime.new_session()
        assert session.model == "cfg-model"
        assert (await session.prompt("hi")).text == "configured"
    (built,) = scripted.built
    assert (built.name, built.kind, built.model) == ("mine", scripted.kind, "cfg-model")
    assert scripted.requests[0].model == "cfg-model"


def test_from_config_lays_arguments_over_the_config(
    scripted: Scripted, home: Path, work: Path, tmp_path: Path
) -> None:
    user_config(home, scripted.kind)
    other = tmp_path / "other"
    other.mkdir()

    @tool(read_only=True)
    def ping() -> str:
        """Answer pong."""
        return "pong"

    runtime = Runtime.from_config(
        cwd=work,
        model="other-model",
        max_iterations=2,
        allow_shell=True,
        approval="deny",
        work_dir=other,
        tools=[ping],
        mcp_servers={"extra": {"command": "python3"}},
    )
    s = runtime.settings
    assert (s.provider, s.model, s.max_iterations) == ("mine", "other-model", 2)
    assert (s.allow_shell, s.approval, s.work_dir) == (True, "deny", other)
    assert set(s.mcp_servers) == {"configured", "extra"}
    assert s.mcp_servers["extra"] == McpServerEntry(command="python3")
    assert runtime.tools == [ping]


def test_from_config_honours_the_environment(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config(home, scripted.kind)
    monkeypatch.setenv("OPENHEIM_MODEL", "other-model")
    monkeypatch.setenv("OPENHEIM_MAX_ITERATIONS", "5")
    s = Runtime.from_config(cwd=work).settings
    assert (s.model, s.max_iterations) == ("other-model", 5)
    s = Runtime.from_config(cwd=work, max_iterations=9).settings
    assert s.max_iterations == 9  # an argument wins over the environment


def test_from_config_reads_the_project_config(scripted: Scripted, home: Path, work: Path) -> None:
    user_config(home, scripted.kind)
    sub = work / "deep" / "inside"
    sub.mkdir(parents=True)
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text("max_iterations = 4\n")
    s = Runtime.from_config(cwd=sub).settings
    assert s.max_iterations == 4
    assert s.project_root == work
    assert s.work_dir == sub


def test_from_config_without_cwd_uses_the_process_cwd(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config(home, scripted.kind)
    monkeypatch.chdir(work)
    assert Runtime.from_config().settings.work_dir == work


def test_from_config_refuses_a_bad_approval_mode(
    scripted: Scripted, home: Path, work: Path
) -> None:
    user_config(home, scripted.kind)
    with pytest.raises(ConfigError, match="approval must be one of"):
        Runtime.from_config(cwd=work, approval="sometimes")


def test_from_config_refuses_a_bad_mcp_server(scripted: Scripted, home: Path, work: Path) -> None:
    user_config(home, scripted.kind)
    with pytest.raises(ConfigError, match="'oops'"):
        Runtime.from_config(cwd=work, mcp_servers={"oops": {"urll": "x"}})


async def test_from_config_with_an_approval_callback_asks_it(
    scripted: Scripted, home: Path, work: Path
) -> None:
    user_config(home, scripted.kind, mcp=False)  # approval = "auto" in the file
    asked: list[str] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return False

    runtime = Runtime.from_config(cwd=work, approval=callback)
    assert runtime.settings.approval == "ask"
    args = {"path": "x.txt", "content": "x"}
    scripted.provider.add(Reply(tool_calls=[tool_call("write_file", args)]), "ok")
    async with runtime, await runtime.new_session() as session:
        result = await session.prompt("write")
    assert asked == ["write_file"]
    assert [e.status for e in result.events if isinstance(e, ToolResult)] == ["denied"]
    assert not (work / "x.txt").exists()


async def test_a_key_laid_over_given_settings_keeps_their_model(
    scripted: Scripted, home: Path, work: Path
) -> None:
    """``Runtime(settings=..., api_key=...)`` only adds the key: the chosen model stays."""
    user_config(home, scripted.kind, mcp=False)
    settings = Runtime.from_config(cwd=work, model="other-model").settings
    key = secret_key()
    runtime = Runtime(settings=settings, api_key=key)
    assert runtime.settings.providers["mine"].api_key == key
    assert (runtime.settings.provider, runtime.settings.model) == ("mine", "other-model")
    scripted.provider.add("ok")
    async with runtime, await runtime.new_session() as session:
        await session.prompt("hi")
    assert scripted.requests[0].model == "other-model"
    assert scripted.built[0].api_key == key
