"""Assemble a runnable session from settings: provider, tools, skills, memory, prompt, store.

Every surface opens its sessions through ``open_session`` (by way of ``Runtime``) instead of
wiring parts itself, so surfaces stay thin translations of the event stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from openheim.agents.profiles import AgentProfile
from openheim.approval import ApprovalGate, Resolver
from openheim.child_env import child_env
from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.config.schema import McpServerEntry
from openheim.env_files import register_env_files
from openheim.errors import ConfigError
from openheim.fsutil import atomic_write
from openheim.loop import Agent
from openheim.prompt import PromptBuilder
from openheim.providers.base import ProviderSettings, ToolChoice
from openheim.runtime.history import PersistentHistory
from openheim.runtime.policy import policy_gate, staged_gate
from openheim.runtime.provider import build_provider
from openheim.runtime.session import Session
from openheim.runtime.subagents import Spawner, main_profile, profile_provider, profiles_for
from openheim.runtime.tools import ToolRequest, session_tools
from openheim.secrets import SecretPolicy
from openheim.skills import LOAD_SKILL, skills_for
from openheim.store import SessionRecord, SessionStore, import_rust_history, open_store
from openheim.tools import shell_sandbox
from openheim.tools.base import Tool, ToolContext
from openheim.tools.client_io import ClientIO
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import SandboxMode, ShellSandbox
from openheim.usage import DEFAULT_PRICES, Meter, Price

if TYPE_CHECKING:
    from openheim.safety.staging import StagingArea


def make_meter(settings: Settings) -> Meter:
    """The usage meter: default prices overlaid with ``[prices]``, and the budget caps."""
    prices = dict(DEFAULT_PRICES)
    for model, entry in settings.prices.items():
        prices[model] = Price(entry.input, entry.output, entry.cache_read, entry.cache_write)
    return Meter(prices, settings.max_cost, settings.max_tokens_per_session)


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
    tool_choice: ToolChoice = "auto"
    """For the first model call of each prompt: ``auto``, ``required``, ``none`` or a tool."""
    cwd: Path | None = None
    """The session's working directory (and sandbox root) instead of ``work_dir``; it must lie
    inside ``work_dir``."""
    mcp_servers: Mapping[str, McpServerEntry] = field(default_factory=dict)
    """MCP servers for this session only (an ACP client's), besides the configured ones."""


@contextlib.asynccontextmanager
async def open_session(
    settings: Settings,
    options: SessionOptions | None = None,
    *,
    gate: ApprovalGate | None = None,
    resolver: Resolver | None = None,
    tools: Sequence[Tool] = (),
    client: ClientIO | None = None,
) -> AsyncIterator[Session]:
    """A new or resumed session with its agent; everything it opened is closed on exit.

    ``tools`` are offered besides the configured ones; ``client`` is the file and terminal
    access of the surface's client (an ACP editor), if it offers any."""
    options = options or SessionOptions()
    settings = session_settings(settings, options)
    async with contextlib.AsyncExitStack() as stack:
        store = _open_store(settings, options, stack)
        record = _find_record(store, settings, options)
        profiles = profiles_for(settings)
        profile = main_profile(settings, profiles, options.agent)
        chosen = _choose_provider(settings, options, record)
        if profile is not None and profile.model and not (options.provider or options.model):
            chosen = profile_provider(settings, profile)
        names = _skill_names(settings, options, record)
        skills = skills_for(settings)
        area = _staging_area(settings)
        spawner = Spawner(settings, stack, store, build_provider)
        wanted = ToolRequest(options.tool_patterns, options.tool_choice, tools)
        offered = await session_tools(
            settings, wanted, stack, skills, area, spawner, profiles, profile
        )
        work_dir = Path(settings.work_dir)
        sandbox = PathSandbox(work_dir)
        policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
        shell = await _shell_sandbox(settings, policy, "execute_command" in offered)
        register_env_files(work_dir)
        prompt = PromptBuilder(
            data_dir=settings.data_dir,
            cwd=work_dir,
            skills=skills,
            active_skills=names,
            catalog=LOAD_SKILL in offered,
        )
        provider = build_provider(settings, chosen)
        stack.push_async_callback(provider.aclose)
        agent = Agent(
            provider=provider,
            model=chosen.model,
            tools=offered,
            system=_persona(profile, work_dir) if profile else prompt.build(),
            gate=staged_gate(gate or policy_gate(settings, sandbox), area),
            resolver=resolver,
            context=ToolContext(
                sandbox,
                work_dir,
                child_env(allow=settings.shell_env_allow),
                secret_policy=policy,
                client=client,
                shell_sandbox=shell,
            ),
            max_iterations=(profile.max_iterations if profile else None) or settings.max_iterations,
            max_tokens=chosen.max_tokens,
            meter=make_meter(settings),
            tool_choice=options.tool_choice,
        )
        session = _session(agent, store, record, chosen, names, work_dir)
        spawner.parent, spawner.session_id = agent, session.id
        try:
            yield session
        finally:
            session.ended()
        if store is not None and settings.session_log == "markdown":
            _write_markdown_log(settings, store, agent)


async def _shell_sandbox(settings: Settings, policy: SecretPolicy, offered: bool) -> ShellSandbox:
    """How shell commands are confined; when the shell is offered and the OS sandbox is
    missing, a notice says so (once per process)."""
    mode = cast("SandboxMode", settings.shell_sandbox)
    shell = ShellSandbox(mode, settings.shell_network, policy.fixed_paths())
    line = await asyncio.to_thread(shell_sandbox.notice, shell) if offered else None
    if line is not None:
        settings.notices.append(line)
    return shell


def session_settings(settings: Settings, options: SessionOptions) -> Settings:
    """``settings`` with the session's own provider, model, working directory and MCP servers
    applied."""
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


def _staging_area(settings: Settings) -> StagingArea | None:
    if settings.file_changes != "staged":
        return None
    from openheim.safety.staging import StagingArea

    return StagingArea(uuid.uuid4().hex)


def _persona(profile: AgentProfile, work_dir: Path) -> str:
    """A profile run as the main agent: its own system prompt, plus where it works."""
    return f"{profile.system_prompt.strip()}\n\nWorking directory: {work_dir}"


def _open_store(
    settings: Settings, options: SessionOptions, stack: contextlib.AsyncExitStack
) -> SessionStore | None:
    if not (options.persist and settings.save_sessions):
        if options.resume or options.continue_latest:
            raise ConfigError(
                "cannot resume a session with session saving turned off",
                hint="drop --no-session, or set save_sessions = true in config.toml",
            )
        return None
    store = open_store(settings.data_dir)
    stack.callback(store.close)
    history = settings.data_dir / "history"
    if history.is_dir():
        import_rust_history(store, history)
    return store


def _find_record(
    store: SessionStore | None, settings: Settings, options: SessionOptions
) -> SessionRecord | None:
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


def _choose_provider(
    settings: Settings, options: SessionOptions, record: SessionRecord | None
) -> ProviderSettings:
    if record is None or options.provider or options.model:
        return resolve_provider(settings)
    resumed = dataclasses.replace(settings, provider=record.provider, model=record.model)
    return resolve_provider(resumed)


def _skill_names(
    settings: Settings, options: SessionOptions, record: SessionRecord | None
) -> list[str]:
    base = record.skills if record is not None else settings.default_skills
    return list(dict.fromkeys([*base, *options.skills]))


def _session(
    agent: Agent,
    store: SessionStore | None,
    record: SessionRecord | None,
    chosen: ProviderSettings,
    skills: list[str],
    work_dir: Path,
) -> Session:
    if store is None:
        return Session(agent, [], provider_settings=chosen)
    if record is None:
        record = store.create(
            cwd=str(work_dir), provider=chosen.name, model=chosen.model, skills=skills
        )
    else:
        agent.meter.usage, agent.meter.cost = record.usage, record.cost
        if skills != record.skills or chosen.model != record.model:
            store.update(record.id, skills=skills, model=chosen.model, provider=chosen.name)
    history = PersistentHistory(store, record.id, store.messages(record.id))
    return Session(agent, history, record=record, store=store, provider_settings=chosen)


def _write_markdown_log(settings: Settings, store: SessionStore, agent: Agent) -> None:
    """``session_log = "markdown"``: each finished session also as a Markdown file."""
    from openheim.store.export import export_markdown

    for record in store.list(cwd=str(settings.work_dir), limit=1):
        folder = settings.data_dir / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.localtime(record.created_at))
        text = export_markdown(store, record.id, system_prompt=agent.system)
        atomic_write(folder / f"{stamp}-{record.id[:8]}.md", text.encode("utf-8"))
