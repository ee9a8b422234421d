"""Settings for the library API: from the config files, or from keyword arguments alone.

Both paths end in the same ``Settings`` the CLI uses, so a library session behaves exactly like
``openheim run`` with the same configuration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openheim.config.load import DEFAULT_MAX_ITERATIONS, Settings, openheim_home
from openheim.config.schema import APPROVAL_MODES, McpServerEntry, MemoryEntry, ProviderEntry
from openheim.errors import ConfigError
from openheim.formats.typed import TypeCheckError, from_mapping
from openheim.redaction.secrets import register_secret

McpServers = Mapping[str, McpServerEntry | Mapping[str, Any]]


@dataclass(frozen=True)
class Choices:
    """What a library caller set explicitly (None: keep the configured value)."""

    provider: str | None = None
    model: str | None = None
    api_key: str | None = None
    api_base: str | None = None
    work_dir: str | Path | None = None
    allow_shell: bool | None = None
    data_dir: str | Path | None = None
    mcp_servers: McpServers | None = None
    approval: str | None = None
    max_iterations: int | None = None
    save_sessions: bool | None = None


def programmatic_settings(choices: Choices) -> Settings:
    """Settings from the arguments alone: no config file is read."""
    data_dir = _folder(choices.data_dir, "data_dir") if choices.data_dir else openheim_home()
    base = Settings(
        home=data_dir,
        data_dir=data_dir,
        work_dir=_folder(choices.work_dir or Path.cwd(), "work_dir"),
        allow_shell=False,
        max_iterations=DEFAULT_MAX_ITERATIONS,
        provider=None,
        model=None,
        default_skills=[],
        providers={},
        mcp_servers={},
        memory=MemoryEntry(),
        theme_color=None,
    )
    return apply_choices(base, dataclasses.replace(choices, data_dir=None))


def apply_choices(settings: Settings, choices: Choices) -> Settings:
    """``settings`` with every explicit choice laid over it."""
    changes: dict[str, Any] = {}
    if choices.provider is not None or choices.api_key or choices.api_base:
        changes.update(_provider_changes(settings, choices))
    elif choices.model is not None:
        changes["model"] = choices.model
    if choices.work_dir is not None:
        changes["work_dir"] = _folder(choices.work_dir, "work_dir")
    if choices.data_dir is not None:
        changes["data_dir"] = _folder(choices.data_dir, "data_dir")
    if choices.mcp_servers is not None:
        changes["mcp_servers"] = {**settings.mcp_servers, **mcp_entries(choices.mcp_servers)}
    if choices.approval is not None:
        changes["approval"] = _approval(choices.approval)
    if choices.max_iterations is not None:
        if choices.max_iterations < 1:
            raise ConfigError("max_iterations must be at least 1", hint="use 1 or more")
        changes["max_iterations"] = choices.max_iterations
    for name in ("allow_shell", "save_sessions"):
        if (value := getattr(choices, name)) is not None:
            changes[name] = value
    return dataclasses.replace(settings, **changes)


def _provider_changes(settings: Settings, choices: Choices) -> dict[str, Any]:
    name = choices.provider or settings.provider
    if name is None:
        raise ConfigError(
            "api_key and api_base need a provider", hint="pass provider='openai' (or another)"
        )
    entry = settings.providers.get(name) or ProviderEntry()
    if choices.api_key:
        register_secret(choices.api_key)
    entry = dataclasses.replace(
        entry,
        api_key=choices.api_key or entry.api_key,
        api_base=choices.api_base or entry.api_base,
        default_model=choices.model or entry.default_model,
    )
    switched = choices.provider is not None and choices.provider != settings.provider
    model = choices.model if switched else choices.model or settings.model
    return {"provider": name, "model": model, "providers": {**settings.providers, name: entry}}


def mcp_entries(servers: McpServers) -> dict[str, McpServerEntry]:
    """MCP server entries from entries or plain mappings (the config file's keys)."""
    out: dict[str, McpServerEntry] = {}
    for name, raw in servers.items():
        if isinstance(raw, McpServerEntry):
            out[name] = raw
            continue
        try:
            out[name] = from_mapping(McpServerEntry, raw, f"mcp_servers.{name}")
        except TypeCheckError as err:
            raise ConfigError(
                f"MCP server {name!r}: {err}", hint="see docs/mcp.md for the keys"
            ) from None
    return out


def _approval(mode: str) -> str:
    if mode not in APPROVAL_MODES:
        raise ConfigError(
            f"approval must be one of {', '.join(APPROVAL_MODES)}, got {mode!r}",
            hint="or pass a callback that decides each tool call",
        )
    return mode


def _folder(raw: str | Path, what: str) -> Path:
    path = Path(raw).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {raw} is not a folder", hint=f"pass a folder as {what}")
    if what == "work_dir" and not path.is_dir():
        raise ConfigError(f"work_dir {raw} does not exist", hint="create it or pass another")
    return path
