"""Load the effective settings: built-in defaults < user file < project file < env < flags.

The user file is ``$OPENHEIM_HOME/config.toml`` (default ``~/.openheim``). A project file is the
nearest ``.openheim/config.toml`` in the cwd or a parent. Until the user trusts that folder
(``openheim trust``), only the keys on the allow-list of ``config.untrusted`` are taken from it,
and only within their limits; what it tried and was refused is reported in ``notices``, one
``Notice`` (kind ``trust``) per key.

``Settings`` are read-only once loaded: a session's own notices (MCP servers, permissions,
skills...) belong to that session, never to the settings it was opened with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openheim.config.checks import (
    check_approval,
    check_config,
    check_folder,
    check_max_iterations,
    hook_entries,
    hook_events,
    is_folder,
    resolved,
)
from openheim.config.schema import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_PARALLEL_SUBAGENTS,
    AcpEntry,
    CliAgentsEntry,
    CompactionEntry,
    ConfigFile,
    GatewayEntry,
    HookEntry,
    McpServeEntry,
    McpServerEntry,
    MemoryEntry,
    PriceEntry,
    ProviderEntry,
    ServerEntry,
)
from openheim.config.trust import is_trusted
from openheim.errors import ConfigError
from openheim.events import Notice
from openheim.formats.tomlfile import read_toml, typed_table
from openheim.formats.typed import from_mapping

__all__ = ["DEFAULT_MAX_ITERATIONS", "Overrides", "Settings", "load_settings", "openheim_home"]

PROJECT_FILES = ("config.toml", "permissions.toml")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Overrides:
    """Values from command-line flags; ``None`` means the flag was not given."""

    provider: str | None = None
    model: str | None = None
    max_iterations: int | None = None
    allow_shell: bool | None = None
    work_dir: str | None = None
    approval: str | None = None


@dataclass(frozen=True)
class Settings:
    """The effective configuration of one invocation."""

    home: Path
    data_dir: Path
    work_dir: Path
    allow_shell: bool
    max_iterations: int
    provider: str | None
    model: str | None
    default_skills: list[str]
    providers: dict[str, ProviderEntry]
    mcp_servers: dict[str, McpServerEntry]
    memory: MemoryEntry
    theme_color: str | None
    theme: str | None = None
    """The terminal UI's theme (``[tui] theme``)."""
    show_thinking: bool = True
    """Whether the terminal UI streams the model's thinking (``[tui] show_thinking``)."""
    prices: dict[str, PriceEntry] = field(default_factory=dict)
    max_cost: float | None = None
    max_tokens_per_session: int | None = None
    save_sessions: bool = True
    session_log: str | None = None
    file_changes: str = "direct"
    web_fetch_allow: list[str] = field(default_factory=list)
    approval: str = "ask"
    default_agent: str | None = None
    max_parallel_subagents: int = 4
    inline_subagents: bool = False
    deny_read: list[str] | None = None
    shell_env_allow: list[str] = field(default_factory=list)
    shell_sandbox: str = "auto"
    shell_network: bool = False
    project_trusted: bool = False
    sources: list[Path] = field(default_factory=list)
    notices: tuple[Notice, ...] = ()
    """What loading refused and why (an untrusted project's keys)."""
    project_root: Path | None = None
    server: ServerEntry = field(default_factory=ServerEntry)
    """``[server]`` for ``openheim serve`` (refused in an untrusted project's config)."""
    mcp_server: McpServeEntry = field(default_factory=McpServeEntry)
    """``[mcp_server]`` for ``openheim mcp serve`` (refused in an untrusted project's config)."""
    acp: AcpEntry = field(default_factory=AcpEntry)
    """``[acp]`` for ``openheim acp`` and ``/acp`` (an untrusted project may only narrow it)."""
    compaction: CompactionEntry = field(default_factory=CompactionEntry)
    """``[compaction]``: when and by which model older turns are summarised."""
    hooks: dict[str, HookEntry] = field(default_factory=dict)
    """``[hooks]`` by event name (refused in an untrusted project's config)."""
    cli_agents: CliAgentsEntry = field(default_factory=CliAgentsEntry)
    """``[cli_agents]`` for the CLI tools of ``openheim mcp serve`` (refused likewise)."""
    gateway: GatewayEntry = field(default_factory=GatewayEntry)
    """``[gateway]`` for ``openheim gateway`` (from the user's own config only)."""
    store_url: str | None = None
    """The PostgreSQL store's URL (``OPENHEIM_STORE_URL``, else the user's own config only);
    None keeps sessions in SQLite in ``data_dir``."""


def openheim_home(env: Mapping[str, str] | None = None) -> Path:
    """``$OPENHEIM_HOME`` (default ``~/.openheim``); a ConfigError when it cannot be a folder."""
    env = os.environ if env is None else env
    raw = env.get("OPENHEIM_HOME")
    home = resolved(raw, Path.cwd(), "OPENHEIM_HOME") if raw else Path.home() / ".openheim"
    return check_folder(home, "OPENHEIM_HOME")


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse and validate one file; the raw table is returned for layering."""
    raw = read_toml(path)
    config = typed_table(
        path, raw, ConfigFile, "see docs/configuration.md for the valid keys and values"
    )
    check_config(path, config)
    return hook_events(path, raw)


def _present(path: Path) -> bool:
    """Whether something is at ``path``: a folder or a broken link there is an error when read,
    never a reason to carry on without the file."""
    return path.exists() or path.is_symlink()


def find_project_root(cwd: Path, home: Path) -> Path | None:
    """The nearest folder at or above ``cwd`` holding ``.openheim/config.toml`` or
    ``.openheim/permissions.toml``."""
    for folder in (cwd, *cwd.parents):
        candidate = folder / ".openheim"
        if candidate.resolve() == home.resolve():
            continue  # that is the user's own data dir, not a project
        if any(_present(candidate / name) for name in PROJECT_FILES):
            return folder
    return None


def load_settings(
    overrides: Overrides | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    env = os.environ if env is None else env
    overrides = overrides or Overrides()
    cwd = (cwd or Path.cwd()).resolve()
    home = openheim_home(env)
    notices: list[str] = []
    sources: list[Path] = []
    merged: dict[str, Any] = {}
    trusted = False
    user_file = home / "config.toml"
    if _present(user_file):
        merged = read_config_file(user_file)
        sources.append(user_file)
    work_dir = _dir_setting(merged.get("work_dir"), cwd, "work_dir", user_file) or cwd
    data_dir = home
    if merged.get("data_dir"):
        data_dir = check_folder(resolved(merged["data_dir"], cwd, "data_dir"), "data_dir")
    root = find_project_root(cwd, home)
    if root is not None:
        project_file = root / ".openheim" / "config.toml"
        project: dict[str, Any] = {}
        if _present(project_file):
            project = read_config_file(project_file)
            sources.append(project_file)
        trusted = is_trusted(root, data_dir)
        if trusted and project.pop("gateway", None) is not None:
            notices.append(f"{project_file}: [gateway] ignored: only your own config sets it")
        if trusted and project.pop("store_url", None) is not None:
            notices.append(f"{project_file}: store_url ignored: only your own config sets it")
        if project and not trusted:
            from openheim.config.untrusted import Context, untrusted_view  # only then needed

            project = untrusted_view(project, Context(merged, root, work_dir), notices)
        where = root / ".openheim"
        work_dir = _dir_setting(project.get("work_dir"), root, "work_dir", where) or work_dir
        data_dir = _dir_setting(project.get("data_dir"), root, "data_dir", project_file) or data_dir
        merged = _deep_merge(merged, project)
    paths = _Paths(cwd, home, data_dir, work_dir, root, trusted)
    return _finish(merged, overrides, env, paths, sources, notices)


@dataclass(frozen=True)
class _Paths:
    cwd: Path
    home: Path
    data_dir: Path
    work_dir: Path
    project_root: Path | None
    project_trusted: bool = False


def _finish(
    merged: dict[str, Any],
    overrides: Overrides,
    env: Mapping[str, str],
    paths: _Paths,
    sources: list[Path],
    notices: list[str],
) -> Settings:
    config = from_mapping(ConfigFile, merged)
    work_dir = paths.work_dir
    raw_work = overrides.work_dir or env.get("OPENHEIM_WORK_DIR")
    if raw_work:
        work_dir = _dir_setting(raw_work, paths.cwd, "work_dir", None) or work_dir
    shell_env = _env_bool(env, "OPENHEIM_ALLOW_SHELL")
    allow_shell = _first(overrides.allow_shell, shell_env, bool(config.allow_shell))
    max_iterations = _first(
        overrides.max_iterations,
        _env_int(env, "OPENHEIM_MAX_ITERATIONS"),
        config.max_iterations,
        DEFAULT_MAX_ITERATIONS,
    )
    check_max_iterations(max_iterations, "max_iterations")
    return Settings(
        home=paths.home,
        data_dir=paths.data_dir,
        work_dir=work_dir,
        allow_shell=allow_shell,
        max_iterations=max_iterations,
        provider=overrides.provider or env.get("OPENHEIM_PROVIDER") or config.default_provider,
        model=overrides.model or env.get("OPENHEIM_MODEL") or None,
        default_skills=list(config.default_skills or []),
        providers=dict(config.providers),
        mcp_servers=dict(config.mcp_servers),
        memory=config.memory or MemoryEntry(),
        theme_color=(config.tui.theme_color if config.tui else None) or config.theme_color,
        theme=config.tui.theme if config.tui else None,
        show_thinking=not config.tui or config.tui.show_thinking is not False,
        prices=dict(config.prices),
        max_cost=config.max_cost,
        max_tokens_per_session=config.max_tokens_per_session,
        save_sessions=config.save_sessions is not False,
        session_log=config.session_log,
        file_changes=config.file_changes or "direct",
        web_fetch_allow=list(config.web_fetch_allow),
        approval=_approval(overrides, env, config),
        deny_read=config.deny_read,
        default_agent=config.default_agent,
        max_parallel_subagents=config.max_parallel_subagents or DEFAULT_PARALLEL_SUBAGENTS,
        inline_subagents=bool(config.inline_subagents),
        shell_env_allow=list(config.shell_env_allow),
        shell_sandbox=config.shell_sandbox or "auto",
        shell_network=bool(config.shell_network),
        project_trusted=paths.project_trusted,
        sources=sources,
        notices=tuple(Notice(line, "warning", "trust") for line in notices),
        project_root=paths.project_root,
        store_url=(env.get("OPENHEIM_STORE_URL") or "").strip() or config.store_url or None,
        **_feature_tables(config),
    )


def _feature_tables(config: ConfigFile) -> dict[str, Any]:
    """The tables of features: serve, ACP, mcp serve, hooks, CLI agents, compaction,
    gateway."""
    return {
        "acp": config.acp or AcpEntry(),
        "compaction": config.compaction or CompactionEntry(),
        "server": config.server or ServerEntry(),
        "mcp_server": config.mcp_server or McpServeEntry(),
        "hooks": hook_entries(config.hooks),
        "cli_agents": config.cli_agents or CliAgentsEntry(),
        "gateway": config.gateway or GatewayEntry(),
    }


def _approval(overrides: Overrides, env: Mapping[str, str], config: ConfigFile) -> str:
    if overrides.approval is not None:
        return check_approval(overrides.approval, "approval")
    raw = env.get("OPENHEIM_APPROVAL")
    if raw is not None and raw.strip():
        return check_approval(raw.strip(), "OPENHEIM_APPROVAL")
    return config.approval or "ask"


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _env_bool(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean", hint=f"set {name} to 1 or 0")


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number", hint=f"set {name}=20") from None


def _dir_setting(raw: object, base: Path, key: str, source: Path | None) -> Path | None:
    if raw is None or raw == "":
        return None
    where = f"{source}: " if source else ""
    path = resolved(raw, base, f"{where}{key}")
    if not is_folder(path, f"{where}{key}"):
        raise ConfigError(
            f"{where}{key} {raw!r} is not an existing directory", hint="create it or fix the path"
        )
    return path


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
