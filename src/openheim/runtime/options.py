"""``SessionOptions``: which session a surface opens and what it offers the model; and what
they choose among the settings: the session's settings, its store and stored record, its
provider and its skills."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.config.schema import McpServerEntry
from openheim.errors import ConfigError
from openheim.providers.base import ProviderSettings, ToolChoice
from openheim.runtime.shared import Shared
from openheim.store import SessionRecord, SessionStore


@dataclass(frozen=True)
class SessionOptions:
    """Which session a surface runs in, and what it offers the model."""

    resume: str | None = None
    """A session id (or unique prefix) to continue."""
    continue_latest: bool = False
    """Continue the latest session of this working directory."""
    persist: bool = True
    """Store the session (``save_sessions = false`` in config also turns this off)."""
    skills: Sequence[str] = ()
    """Skills to activate besides ``default_skills`` (and a resumed session's own)."""
    tool_patterns: Sequence[str] | None = None
    provider: str | None = None
    """An explicit provider (a flag): it wins over a resumed session's own."""
    model: str | None = None
    agent: str | None = None
    """Run this agent profile as the main agent (``--agent``; else ``default_agent``)."""
    tool_choice: ToolChoice | None = None
    """For the first model call of each prompt: ``auto``, ``required``, ``none`` or a tool;
    None takes the provider's own (its ``tool_choice`` key: ``auto`` unless set, ``required``
    for the shipped SmolLM2)."""
    cwd: Path | None = None
    """The session's working directory (and sandbox root) instead of ``work_dir``; it must lie
    inside ``work_dir``."""
    mcp_servers: Mapping[str, McpServerEntry] = field(default_factory=dict)
    """MCP servers for this session only (an ACP client's), besides the configured ones."""
    system_prompt: str | None = None
    """The system prompt's identity for this session instead of ``system.md`` (``run
    --prompt-name``, ``-s``)."""


def session_settings(settings: Settings, options: SessionOptions) -> Settings:
    """A copy of ``settings`` with the session's own provider, model, working directory and MCP
    servers applied (``settings`` itself is never changed)."""
    if options.provider or options.model:
        settings = dataclasses.replace(
            settings,
            provider=options.provider or settings.provider,
            model=options.model or settings.model,
        )
    if options.mcp_servers:
        servers = {**settings.mcp_servers, **options.mcp_servers}
        settings = dataclasses.replace(settings, mcp_servers=servers)
    if options.cwd is None:
        return settings
    cwd = options.cwd.resolve()
    if not cwd.is_dir() or not cwd.is_relative_to(settings.work_dir):
        raise ConfigError(
            f"the session directory {options.cwd} is not a folder inside {settings.work_dir}",
            hint="open a folder inside the work dir, or start openheim with --work-dir",
        )
    return dataclasses.replace(settings, work_dir=cwd)


def open_session_store(
    settings: Settings,
    options: SessionOptions,
    stack: contextlib.AsyncExitStack,
    shared: Shared | None = None,
) -> SessionStore | None:
    """The session store (closed with ``stack``; borrowed from ``shared`` and given back with
    ``stack`` when given), or None when the session is not saved."""
    if not (options.persist and settings.save_sessions):
        if options.resume or options.continue_latest:
            raise ConfigError(
                "cannot resume a session with session saving turned off",
                hint="drop --no-session, or set save_sessions = true in config.toml",
            )
        return None
    if shared is not None:
        store = stack.enter_context(shared.store_loan(settings.data_dir, settings.store_url))
    else:
        from openheim.store.opener import open_store

        store = open_store(settings.data_dir, settings.store_url)
        stack.callback(store.close)
    history = settings.data_dir / "history"
    if history.is_dir():
        from openheim.store.importer import import_rust_history

        import_rust_history(store, history)
    return store


def find_record(
    store: SessionStore | None, settings: Settings, options: SessionOptions
) -> SessionRecord | None:
    """The stored session to resume or continue, or None for a new one."""
    if store is None:
        return None
    if options.resume:
        return store.get(options.resume)
    if options.continue_latest:
        record = store.latest(str(settings.work_dir))
        if record is None:
            raise ConfigError(
                f"there is no session to continue in {settings.work_dir}",
                hint="start one without --continue, or pick one from `openheim sessions list`",
            )
        return record
    return None


def choose_provider(
    settings: Settings, options: SessionOptions, record: SessionRecord | None
) -> ProviderSettings:
    """The session's provider: an explicit one, else a resumed session's own, else the
    configured default."""
    if record is None or options.provider or options.model:
        return resolve_provider(settings)
    resumed = dataclasses.replace(settings, provider=record.provider, model=record.model)
    return resolve_provider(resumed)


def skill_names(
    settings: Settings, options: SessionOptions, record: SessionRecord | None
) -> list[str]:
    """The skills to activate: ``default_skills`` (or a resumed session's), then the asked."""
    base = record.skills if record is not None else settings.default_skills
    return list(dict.fromkeys([*base, *options.skills]))
