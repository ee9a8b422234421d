"""Load the effective settings: built-in defaults < user file < project file < env < flags.

The user file is ``$OPENHEIM_HOME/config.toml`` (default ``~/.openheim``). A project file is the
nearest ``.openheim/config.toml`` in the cwd or a parent. Until the user trusts that folder
(``openheim trust``), a project file may only narrow safety: it can turn ``allow_shell`` off but
not on, move ``work_dir`` only further inside, and cannot add MCP servers, redirect a provider's
endpoint or key, or move the data dir. What it tried and was refused is reported in ``notices``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openheim.config.schema import (
    ConfigFile,
    McpServerEntry,
    MemoryEntry,
    PriceEntry,
    ProviderEntry,
)
from openheim.config.trust import is_trusted
from openheim.errors import ConfigError
from openheim.secrets import DEFAULT_DENY_READ
from openheim.tomlfile import read_toml, typed_table
from openheim.typed import from_mapping

DEFAULT_MAX_ITERATIONS = 10
PROJECT_FILES = ("config.toml", "permissions.toml")
_ENDPOINT_KEYS = ("kind", "api_base", "env_var", "api_key")
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
    notices: list[str] = field(default_factory=list)
    project_root: Path | None = None


def openheim_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("OPENHEIM_HOME")
    return Path(raw).expanduser().resolve() if raw else Path.home() / ".openheim"


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse and validate one file; the raw table is returned for layering."""
    raw = read_toml(path)
    typed_table(path, raw, ConfigFile, "see docs/configuration.md for the valid keys")
    return raw


def find_project_root(cwd: Path, home: Path) -> Path | None:
    """The nearest folder at or above ``cwd`` holding ``.openheim/config.toml`` or
    ``.openheim/permissions.toml``."""
    for folder in (cwd, *cwd.parents):
        candidate = folder / ".openheim"
        if candidate.resolve() == home.resolve():
            continue  # that is the user's own data dir, not a project
        if any((candidate / name).is_file() for name in PROJECT_FILES):
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
    if user_file.is_file():
        merged = read_config_file(user_file)
        sources.append(user_file)
    work_dir = _dir_setting(merged.get("work_dir"), cwd, "work_dir", user_file) or cwd
    data_dir = home
    if merged.get("data_dir"):
        data_dir = Path(str(merged["data_dir"])).expanduser().resolve()
    root = find_project_root(cwd, home)
    if root is not None:
        project_file = root / ".openheim" / "config.toml"
        project: dict[str, Any] = {}
        if project_file.is_file():
            project = read_config_file(project_file)
            sources.append(project_file)
        trusted = is_trusted(root, data_dir)
        if not trusted:
            project = _narrow(project, merged, notices, root)
        work_dir = _project_work_dir(project, root, work_dir, trusted, notices)
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
    allow_shell = _first(overrides.allow_shell, _env_bool(env, "OPENHEIM_ALLOW_SHELL"))
    if allow_shell is None:
        allow_shell = bool(config.allow_shell)
    max_iterations = _first(
        overrides.max_iterations,
        _env_int(env, "OPENHEIM_MAX_ITERATIONS"),
        config.max_iterations,
        DEFAULT_MAX_ITERATIONS,
    )
    if max_iterations < 1:
        raise ConfigError(
            f"max_iterations must be at least 1, got {max_iterations}", hint="use 1 or more"
        )
    tui_theme = config.tui.theme_color if config.tui else None
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
        theme_color=tui_theme or config.theme_color,
        prices=dict(config.prices),
        max_cost=config.max_cost,
        max_tokens_per_session=config.max_tokens_per_session,
        save_sessions=config.save_sessions is not False,
        session_log=config.session_log,
        file_changes=config.file_changes or "direct",
        web_fetch_allow=list(config.web_fetch_allow),
        approval=overrides.approval or env.get("OPENHEIM_APPROVAL") or config.approval or "ask",
        deny_read=config.deny_read,
        default_agent=config.default_agent,
        max_parallel_subagents=config.max_parallel_subagents or 4,
        inline_subagents=bool(config.inline_subagents),
        shell_env_allow=list(config.shell_env_allow),
        shell_sandbox=config.shell_sandbox or "auto",
        shell_network=bool(config.shell_network),
        project_trusted=paths.project_trusted,
        sources=sources,
        notices=notices,
        project_root=paths.project_root,
    )


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
    path = (base / Path(str(raw)).expanduser()).resolve()
    if not path.is_dir():
        where = f"{source}: " if source else ""
        raise ConfigError(
            f"{where}{key} {raw!r} is not an existing directory", hint="create it or fix the path"
        )
    return path


def _project_work_dir(
    project: dict[str, Any], root: Path, current: Path, trusted: bool, notices: list[str]
) -> Path:
    proposed = _dir_setting(project.get("work_dir"), root, "work_dir", root / ".openheim")
    if proposed is None:
        return current
    if trusted or proposed.is_relative_to(current):
        return proposed
    notices.append(
        f"ignored work_dir {proposed} from the untrusted project config: it is outside {current} "
        "(run `openheim trust` in the project to allow it)"
    )
    return current


def _narrow(
    project: dict[str, Any], user: dict[str, Any], notices: list[str], root: Path
) -> dict[str, Any]:
    """Drop what an untrusted project may not change; record each refusal in ``notices``."""
    out = dict(project)
    why = f"(run `openheim trust {root}` to allow it)"
    if out.get("allow_shell") is True and user.get("allow_shell") is not True:
        notices.append(f"ignored allow_shell = true from the untrusted project config {why}")
        del out["allow_shell"]
    _narrow_approval(out, user, notices, why)
    if "deny_read" in out:
        kept = user.get("deny_read")
        base = list(kept) if isinstance(kept, list) else None
        if base is not None:
            out["deny_read"] = list(dict.fromkeys([*base, *out["deny_read"]]))
        else:
            notices.append(f"kept the default deny_read patterns too {why}")
            out["deny_read"] = [*DEFAULT_DENY_READ, *out["deny_read"]]
    for key in (
        "mcp_servers",
        "data_dir",
        "memory",
        "web_fetch_allow",
        "shell_env_allow",
        "shell_sandbox",
        "shell_network",
    ):
        if key in out:
            notices.append(f"ignored {key} from the untrusted project config {why}")
            del out[key]
    providers = {}
    for name, entry in dict(out.get("providers", {})).items():
        user_entry = user.get("providers", {}).get(name, {})
        changed = [k for k in _ENDPOINT_KEYS if k in entry and entry[k] != user_entry.get(k)]
        if changed:
            notices.append(
                f"ignored {', '.join(changed)} of provider {name!r} from the untrusted "
                f"project config {why}"
            )
        providers[name] = {k: v for k, v in entry.items() if k not in changed}
    if providers:
        out["providers"] = providers
    return out


_STRICTNESS = {"auto": 0, "ask": 1, "deny": 2}


def _narrow_approval(
    out: dict[str, Any], user: dict[str, Any], notices: list[str], why: str
) -> None:
    """An untrusted project may make approval stricter (auto → ask → deny), never looser."""
    wanted = out.get("approval")
    if wanted is None:
        return
    current = user.get("approval") or "ask"
    if _STRICTNESS.get(str(wanted), 0) < _STRICTNESS.get(str(current), 1):
        notices.append(f"ignored approval = {wanted!r} from the untrusted project config {why}")
        del out["approval"]


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
