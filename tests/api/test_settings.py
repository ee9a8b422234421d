"""Settings for the library API (``openheim.runtime.settings``) and the session's own settings in
``openheim.runtime``: ``SessionOptions.cwd`` / ``mcp_servers`` and ``session_settings``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.config.load import Settings
from openheim.config.providers import infer_kind
from openheim.config.schema import APPROVAL_MODES, McpServerEntry, ProviderEntry
from openheim.errors import ConfigError
from openheim.events import ToolResult
from openheim.runtime import SessionOptions, open_session, session_settings
from openheim.runtime.settings import (
    Choices,
    apply_choices,
    mcp_entries,
    programmatic_settings,
)
from openheim.testing import Reply, tool_call
from tests.api.conftest import MODEL, Scripted


@pytest.fixture
def base(home: Path, work: Path) -> Settings:
    """Programmatic settings with one configured provider and one MCP server."""
    s = programmatic_settings(Choices(data_dir=home, work_dir=work))
    return dataclasses.replace(
        s,
        provider="main",
        model="main-model",
        providers={
            "main": ProviderEntry(
                kind="openai_compatible",
                api_base="http://127.0.0.1:1/v1",
                api_key="old-key-123456",
                default_model="main-default",
                models=["main-default", "main-model"],
                timeout_secs=7,
            )
        },
        mcp_servers={"kept": McpServerEntry(command="kept")},
    )


# --- programmatic_settings / apply_choices ----------------------------------------------------


def test_programmatic_settings_use_only_the_choices(home: Path, work: Path) -> None:
    s = programmatic_settings(Choices(data_dir=home, work_dir=work))
    assert (s.home, s.data_dir, s.work_dir) == (home, home, work)
    assert (s.provider, s.model, s.providers, s.mcp_servers) == (None, None, {}, {})
    assert (s.approval, s.save_sessions, s.allow_shell, s.sources) == ("ask", True, False, [])


def test_programmatic_paths_are_expanded_and_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    s = programmatic_settings(Choices(data_dir="~/data", work_dir="."))
    assert (s.data_dir, s.home, s.work_dir) == (
        tmp_path / "data",
        tmp_path / "data",
        tmp_path / "proj",
    )


def test_no_choices_change_nothing(base: Settings) -> None:
    assert apply_choices(base, Choices()) == base


def test_a_model_alone_keeps_the_provider(base: Settings) -> None:
    s = apply_choices(base, Choices(model="main-default"))
    assert (s.provider, s.model, s.providers) == ("main", "main-default", base.providers)


def test_a_provider_choice_keeps_the_rest_of_its_entry(base: Settings) -> None:
    s = apply_choices(base, Choices(provider="main", model="main-default", api_key="new-key-98765"))
    entry = s.providers["main"]
    assert (s.provider, s.model) == ("main", "main-default")
    assert (entry.api_key, entry.default_model) == ("new-key-98765", "main-default")
    assert (entry.api_base, entry.timeout_secs, entry.kind) == (
        "http://127.0.0.1:1/v1",
        7,
        "openai_compatible",
    )
    assert entry.models == ["main-default", "main-model"]
    assert base.providers["main"].api_key == "old-key-123456"  # the input is not changed


def test_a_new_provider_gets_an_entry(base: Settings) -> None:
    s = apply_choices(base, Choices(provider="anthropic", api_key="sk-ant-not-a-real-key-0000"))
    assert s.provider == "anthropic"
    assert infer_kind("anthropic", s.providers["anthropic"]) == "anthropic"  # a kind's name
    assert s.providers["anthropic"].api_key == "sk-ant-not-a-real-key-0000"
    assert "main" in s.providers


@pytest.mark.parametrize(
    ("choices", "changed"),
    [
        (Choices(api_key="brand-new-key-4242"), "api_key"),
        (Choices(api_base="http://127.0.0.1:2/v1"), "api_base"),
    ],
    ids=["key", "base"],
)
def test_an_endpoint_alone_changes_only_the_endpoint(
    base: Settings, choices: Choices, changed: str
) -> None:
    """A key or a base for the configured provider keeps the chosen provider and model."""
    s = apply_choices(base, choices)
    assert s.provider == "main"
    entry, before = s.providers["main"], base.providers["main"]
    assert getattr(entry, changed) == getattr(choices, changed)
    assert dataclasses.replace(entry, **{changed: getattr(before, changed)}) == before
    assert s.model == "main-model"


def test_mcp_servers_are_merged_over_the_configured_ones(base: Settings) -> None:
    s = apply_choices(
        base,
        Choices(mcp_servers={"new": {"url": "http://127.0.0.1:3/mcp"}, "kept2": {"command": "x"}}),
    )
    assert set(s.mcp_servers) == {"kept", "new", "kept2"}
    replaced = apply_choices(base, Choices(mcp_servers={"kept": {"command": "other"}}))
    assert replaced.mcp_servers == {"kept": McpServerEntry(command="other")}


def test_the_other_choices(base: Settings, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    s = apply_choices(
        base,
        Choices(
            work_dir=other,
            data_dir=tmp_path / "data",
            approval="deny",
            max_iterations=3,
            allow_shell=True,
            save_sessions=False,
        ),
    )
    assert (s.work_dir, s.data_dir, s.approval, s.max_iterations) == (
        other,
        tmp_path / "data",
        "deny",
        3,
    )
    assert (s.allow_shell, s.save_sessions) == (True, False)
    assert apply_choices(s, Choices(allow_shell=False, save_sessions=True)).allow_shell is False


def test_approval_modes_are_the_config_modes() -> None:
    assert APPROVAL_MODES == ("ask", "edits", "auto", "deny")
    assert apply_choices(programmatic_settings(Choices()), Choices(approval="edits")).approval == (
        "edits"
    )
    with pytest.raises(ConfigError, match="approval must be one of ask, edits, auto, deny"):
        apply_choices(programmatic_settings(Choices()), Choices(approval="edit"))


# --- mcp_entries ------------------------------------------------------------------------------


def test_mcp_entries_accept_entries_and_mappings() -> None:
    entry = McpServerEntry(url="http://127.0.0.1:4/mcp")
    out = mcp_entries(
        {
            "a": entry,
            "b": {"command": "srv", "args": ["--x"], "cwd": "/tmp", "startup_timeout": 2.5},
            "c": {"url": "http://127.0.0.1:5/mcp", "headers": {"X-Token": "t"}},
        }
    )
    assert out["a"] is entry
    assert out["b"] == McpServerEntry(command="srv", args=["--x"], cwd="/tmp", startup_timeout=2.5)
    assert out["c"] == McpServerEntry(url="http://127.0.0.1:5/mcp", headers={"X-Token": "t"})
    assert mcp_entries({}) == {}


@pytest.mark.parametrize(
    "raw",
    [{"cmd": "x"}, {"command": 3}, {"env": ["A=1"]}, {"startup_timeout": "soon"}],
    ids=["unknown-key", "command-type", "env-type", "timeout-type"],
)
def test_a_bad_mcp_mapping_names_its_server(raw: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="MCP server 'my-server'") as info:
        mcp_entries({"ok": {"command": "y"}, "my-server": raw})
    assert info.value.hint is not None and "mcp" in info.value.hint


# --- SessionOptions / session_settings --------------------------------------------------------


def test_session_options_defaults() -> None:
    first, second = SessionOptions(), SessionOptions()
    assert (first.cwd, dict(first.mcp_servers)) == (None, {})
    assert first.mcp_servers is not second.mcp_servers


def test_session_settings_without_options_are_unchanged(base: Settings) -> None:
    assert session_settings(base, SessionOptions()) is base


def test_session_settings_apply_provider_and_model(base: Settings) -> None:
    s = session_settings(base, SessionOptions(model="main-default"))
    assert (s.provider, s.model) == ("main", "main-default")
    s = session_settings(base, SessionOptions(provider="other"))
    assert (s.provider, s.model) == ("other", "main-model")
    assert (base.provider, base.model) == ("main", "main-model")


def test_session_settings_add_the_sessions_mcp_servers(base: Settings) -> None:
    extra = {"mine": McpServerEntry(command="mine")}
    s = session_settings(base, SessionOptions(mcp_servers=extra))
    assert s.mcp_servers == {"kept": McpServerEntry(command="kept"), "mine": extra["mine"]}
    assert set(base.mcp_servers) == {"kept"}  # the runtime's settings are not changed
    override = {"kept": McpServerEntry(command="replacement")}
    assert session_settings(base, SessionOptions(mcp_servers=override)).mcp_servers == override


def test_session_settings_move_the_work_dir_to_the_session_cwd(base: Settings, work: Path) -> None:
    sub = work / "a" / "b"
    sub.mkdir(parents=True)
    assert session_settings(base, SessionOptions(cwd=sub)).work_dir == sub
    assert session_settings(base, SessionOptions(cwd=work)).work_dir == work
    dotted = work / "a" / ".." / "a"
    assert session_settings(base, SessionOptions(cwd=dotted)).work_dir == work / "a"
    assert base.work_dir == work


def test_session_settings_resolve_a_relative_cwd(
    base: Settings, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "rel").mkdir()
    monkeypatch.chdir(work)
    assert session_settings(base, SessionOptions(cwd=Path("rel"))).work_dir == work / "rel"


def test_session_settings_follow_a_symlink_that_stays_inside(base: Settings, work: Path) -> None:
    (work / "real").mkdir()
    (work / "alias").symlink_to(work / "real")
    assert session_settings(base, SessionOptions(cwd=work / "alias")).work_dir == work / "real"


@pytest.mark.parametrize("where", ["parent", "sibling", "missing", "file", "symlink-out"])
def test_session_settings_refuse_a_cwd_outside_the_work_dir(
    base: Settings, work: Path, tmp_path: Path, where: str
) -> None:
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (work / "f.txt").write_text("x")
    (work / "out").symlink_to(sibling)
    cwd = {
        "parent": work.parent,
        "sibling": sibling,
        "missing": work / "missing",
        "file": work / "f.txt",
        "symlink-out": work / "out",
    }[where]
    with pytest.raises(ConfigError, match="not a folder inside") as info:
        session_settings(base, SessionOptions(cwd=cwd, mcp_servers={"x": McpServerEntry()}))
    assert str(work) in str(info.value)


# --- open_session with the new options --------------------------------------------------------


async def test_open_session_runs_in_the_session_cwd(
    scripted: Scripted, home: Path, work: Path
) -> None:
    sub = work / "pkg"
    sub.mkdir()
    settings = Runtime(provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work).settings
    async with open_session(settings, SessionOptions(cwd=sub)) as session:
        assert session.agent.context.cwd == sub
        assert session.agent.context.sandbox.root == sub
        assert session.record is not None and session.record.cwd == str(sub)
        assert session.agent.system is not None and str(sub) in session.agent.system


async def test_runtime_open_session_passes_tools_and_resolver(
    scripted: Scripted, home: Path, work: Path
) -> None:
    """``Runtime.open_session``, the context manager ``openheim run`` uses, in one task."""
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    async def resolver(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        return Deny("the explicit resolver wins")

    runtime = Runtime(
        provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work, approval=callback
    )
    call = Reply(tool_calls=[tool_call("write_file", {"path": "a.txt", "content": "a"})])
    scripted.provider.add(call, "ok", call, "ok")
    async with runtime.open_session(SessionOptions(persist=False)) as session:
        assert session.id is None
        events = [e async for e in session.prompt("write")]
    assert [e.status for e in events if isinstance(e, ToolResult)] == ["completed"]
    assert [r.tool for r in asked] == ["write_file"]
    async with runtime.open_session(SessionOptions(persist=False), resolver=resolver) as session:
        events = [e async for e in session.prompt("write")]
    refused = [e for e in events if isinstance(e, ToolResult)]
    assert [e.status for e in refused] == ["denied"]
    assert "the explicit resolver wins" in refused[0].content
    assert len(asked) == 1
