"""Assemble a runnable session from settings: provider, tools, skills, memory, prompt, store.

Every surface opens its sessions through ``open_session`` (by way of ``Runtime``) instead of
wiring parts itself, so surfaces stay thin translations of the event stream. The settings are
only read: what assembly finds worth telling (an MCP server that failed, a rule ignored, a skill
skipped) becomes a ``Notice`` of the session it concerns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from openheim.agents.profiles import AgentProfile
from openheim.approval import ApprovalGate, Resolver
from openheim.config.load import Settings
from openheim.config.providers import LOCAL_KINDS
from openheim.events import Notice, NoticeKind, SessionStarted
from openheim.files.atomic import atomic_write
from openheim.loop import Agent
from openheim.messages import Message
from openheim.prompts.builder import PromptBuilder
from openheim.providers.base import ProviderSettings, ToolChoice
from openheim.redaction.env_files import register_env_files
from openheim.runtime.clients import Lease
from openheim.runtime.compaction import attach, compacting
from openheim.runtime.confinement import confinement
from openheim.runtime.history import PersistentHistory
from openheim.runtime.hook_gate import HookGate
from openheim.runtime.hooks import Hooks
from openheim.runtime.options import (
    SessionOptions,
    choose_provider,
    find_record,
    open_session_store,
    session_settings,
    skill_names,
)
from openheim.runtime.policy import policy_gate, staged_gate
from openheim.runtime.provider import Lender, build_provider
from openheim.runtime.session import Session
from openheim.runtime.shared import Shared
from openheim.runtime.store_writes import off_loop
from openheim.runtime.subagents import Spawner, main_profile, profile_provider, profiles_for
from openheim.runtime.tools import ToolRequest, session_tools
from openheim.runtime.turn_watch import watch_session
from openheim.skills import LOAD_SKILL, SkillsManager, skills_for
from openheim.store import SessionRecord, SessionStore
from openheim.tools import shell_sandbox
from openheim.tools.base import Tool, ToolContext, ToolSet
from openheim.tools.client_io import ClientIO
from openheim.tools.shell_sandbox import ShellSandbox
from openheim.usage import DEFAULT_PRICES, Meter, Price

if TYPE_CHECKING:
    from openheim.safety.staging import StagingArea


def make_meter(settings: Settings) -> Meter:
    """The usage meter: default prices overlaid with ``[prices]``, and the budget caps."""
    if not settings.prices:  # the common case: every session reads one table
        return Meter(_DEFAULT_PRICES, settings.max_cost, settings.max_tokens_per_session)
    prices = dict(DEFAULT_PRICES)
    for model, entry in settings.prices.items():
        prices[model] = Price(entry.input, entry.output, entry.cache_read, entry.cache_write)
    return Meter(prices, settings.max_cost, settings.max_tokens_per_session)


_DEFAULT_PRICES = MappingProxyType(DEFAULT_PRICES)
"""The default prices, read-only, for meters of sessions that set none of their own."""


@dataclass
class _Parts:
    """What a session's agent is made of, besides its provider and approval gate."""

    chosen: ProviderSettings
    profile: AgentProfile | None
    skills: list[str]
    tools: ToolSet
    area: StagingArea | None
    spawner: Spawner
    system: str
    context: ToolContext


@contextlib.asynccontextmanager
async def open_session(
    settings: Settings,
    options: SessionOptions | None = None,
    *,
    gate: ApprovalGate | None = None,
    resolver: Resolver | None = None,
    tools: Sequence[Tool] = (),
    client: ClientIO | None = None,
    shared: Shared | None = None,
) -> AsyncIterator[Session]:
    """A new or resumed session with its agent; everything it opened is closed on exit.

    ``tools`` are offered besides the configured ones; ``client`` is the file and terminal
    access of the surface's client (an ACP editor), if it offers any; ``shared`` lends what
    the sessions of one runtime use in common (the store connection, HTTP clients). The
    session's notices start with the settings' own, then those found while it opens."""
    options = options or SessionOptions()
    notices = list(settings.notices)
    settings = session_settings(settings, options)
    async with contextlib.AsyncExitStack() as stack:
        store = open_session_store(settings, options, stack, shared)
        record = (
            None
            if store is None
            else await off_loop(store, functools.partial(find_record, store, settings, options))
        )
        lend = await stack.enter_async_context(Lease(shared.clients)) if shared else None
        parts = await _parts(settings, options, record, stack, store, tools, client, notices, lend)
        provider = build_provider(settings, parts.chosen, lend)
        provider = compacting(provider, settings, parts.chosen)
        await stack.enter_async_context(contextlib.aclosing(provider))
        profile = parts.profile
        policy = gate or policy_gate(settings, parts.context.sandbox, notices)
        hooks = Hooks(settings.hooks, parts.context.cwd, parts.context.env)
        if hooks.has("pre_tool"):
            policy = HookGate(policy, hooks)
        agent = Agent(
            provider=provider,
            model=parts.chosen.model,
            tools=parts.tools,
            system=parts.system,
            gate=staged_gate(policy, parts.area),
            resolver=resolver,
            context=parts.context,
            max_iterations=(profile.max_iterations if profile else None) or settings.max_iterations,
            max_tokens=parts.chosen.max_tokens,
            meter=make_meter(settings),
            tool_choice=first_choice(options, parts.chosen),
            tool_rounds=parts.chosen.tool_rounds,
        )
        session = await _session(agent, store, record, parts, notices)
        await attach(session, provider)
        parts.spawner.parent, parts.spawner.session_id = agent, session.id
        watch = watch_session(hooks, session.id, settings.data_dir, parts.context.cwd, store)
        session.watch = parts.context.watch = watch
        await hooks.run("session_start", resumed=record is not None, model=agent.model)
        notices.extend(hooks.drain())
        try:
            yield session
        finally:
            session.ended()
        await hooks.run("session_end")
        if store is not None and settings.session_log == "markdown":
            _write_markdown_log(settings, store, agent)


async def _parts(
    settings: Settings,
    options: SessionOptions,
    record: SessionRecord | None,
    stack: contextlib.AsyncExitStack,
    store: SessionStore | None,
    extra: Sequence[Tool],
    client: ClientIO | None,
    notices: list[Notice],
    lend: Lender | None,
) -> _Parts:
    """The session's profile, provider choice, tools, system prompt and tool context."""
    profiles = profiles_for(settings, notices)
    profile = main_profile(settings, profiles, options.agent)
    chosen = choose_provider(settings, options, record)
    if profile is not None and profile.model and not (options.provider or options.model):
        chosen = profile_provider(settings, profile)
    _note_embedded_model(settings, chosen, notices)
    names = skill_names(settings, options, record)
    skills = skills_for(settings, _teller(notices, "skills"))
    area = _staging_area(settings)
    spawner = Spawner(settings, stack, store, functools.partial(build_provider, lend=lend))
    wanted = ToolRequest(options.tool_patterns, first_choice(options, chosen), extra)
    offered = await session_tools(
        settings,
        wanted,
        stack,
        skills,
        area,
        spawner,
        profiles,
        profile,
        notices,
        small=chosen.small,
    )
    work_dir = settings.work_dir
    sandbox, policy, shell, env = confinement(settings, work_dir)
    await _note_sandbox(shell, "execute_command" in offered, notices)
    register_env_files(work_dir)
    system = _system_prompt(
        settings, skills, names, offered, profile, notices, chosen.small, options.system_prompt
    )
    context = ToolContext(
        sandbox, work_dir, env, secret_policy=policy, client=client, shell_sandbox=shell
    )
    return _Parts(chosen, profile, names, offered, area, spawner, system, context)


def first_choice(options: SessionOptions, chosen: ProviderSettings) -> ToolChoice:
    """The first model call's tool choice in each prompt: the session's, else the provider's."""
    return options.tool_choice if options.tool_choice is not None else chosen.tool_choice


def _system_prompt(
    settings: Settings,
    skills: SkillsManager,
    names: list[str],
    offered: ToolSet,
    profile: AgentProfile | None,
    notices: list[Notice],
    compact: bool,
    identity: str | None = None,
) -> str:
    """The system prompt: built from files (``identity`` instead of ``system.md`` when given),
    or a main profile's own (the builder checks the active skills' names either way);
    ``compact`` for a small model."""
    work_dir = Path(settings.work_dir)
    prompt = PromptBuilder(
        data_dir=settings.data_dir,
        cwd=work_dir,
        skills=skills,
        active_skills=names,
        catalog=any(spec.name == LOAD_SKILL for spec in offered.specs),
        compact=compact,
        warn=_teller(notices, "prompt"),
        identity=identity,
    )
    if profile is not None:
        return f"{profile.system_prompt.strip()}\n\nWorking directory: {work_dir}"
    return prompt.build()


def _teller(notices: list[Notice], kind: NoticeKind) -> Callable[[str], None]:
    """A warning callback that adds each warning to ``notices`` as a notice of ``kind`` (a
    partial rather than a closure: the skills manager keeps it for the session's life)."""
    return functools.partial(_tell, notices, kind)


def _tell(notices: list[Notice], kind: NoticeKind, message: str) -> None:
    notices.append(Notice(message, "warning", kind))


def _note_embedded_model(
    settings: Settings, chosen: ProviderSettings, notices: list[Notice]
) -> None:
    """When no provider is configured and openheim fell back to the embedded model, say so."""
    if settings.provider is None and not settings.providers and chosen.kind in LOCAL_KINDS:
        notices.append(
            Notice(
                f"using the embedded local model {chosen.model} (no provider is configured); "
                "for a hosted model set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, "
                "or run `openheim init`",
                "info",
                "provider",
            )
        )


async def _note_sandbox(shell: ShellSandbox, offered: bool, notices: list[Notice]) -> None:
    """When the shell is offered and the OS sandbox is missing, a notice says so (once per
    process)."""
    line = await asyncio.to_thread(shell_sandbox.notice, shell) if offered else None
    if line is not None:
        notices.append(Notice(line, "warning", "sandbox"))


def _staging_area(settings: Settings) -> StagingArea | None:
    if settings.file_changes != "staged":
        return None
    from openheim.safety.staging import StagingArea

    return StagingArea(uuid.uuid4().hex)


async def _session(
    agent: Agent,
    store: SessionStore | None,
    record: SessionRecord | None,
    parts: _Parts,
    notices: list[Notice],
) -> Session:
    """The session: a new stored record, a resumed one brought up to date, or none. The store
    is read and written by its writing thread: a server opening many sessions at once (or a
    store across the network) never holds its event loop up meanwhile."""
    chosen, skills, cwd = parts.chosen, parts.skills, str(parts.context.cwd)
    resumed = record is not None
    history: list[Message] = []
    if store is not None:
        if record is not None:
            agent.meter.usage, agent.meter.cost = record.usage, record.cost
        stored = functools.partial(_stored, store, record, chosen, skills, cwd)
        kept, messages = await off_loop(store, stored)
        record = kept
        history = PersistentHistory(store, kept.id, messages)
    started = SessionStarted(
        record.id if record else None, chosen.name, chosen.model, cwd, len(history), resumed
    )
    return Session(
        agent,
        history,
        record=record,
        store=store,
        provider_settings=chosen,
        started=started,
        notices=notices,
    )


def _stored(
    store: SessionStore,
    record: SessionRecord | None,
    chosen: ProviderSettings,
    skills: list[str],
    cwd: str,
) -> tuple[SessionRecord, list[Message]]:
    """A new record (``record`` None) or ``record`` with the chosen model and skills; with its
    messages."""
    if record is None:
        record = store.create(cwd=cwd, provider=chosen.name, model=chosen.model, skills=skills)
    elif skills != record.skills or chosen.model != record.model:
        store.update(record.id, skills=skills, model=chosen.model, provider=chosen.name)
    return record, store.messages(record.id)


def _write_markdown_log(settings: Settings, store: SessionStore, agent: Agent) -> None:
    """``session_log = "markdown"``: each finished session also as a Markdown file."""
    from openheim.store.export import export_markdown

    for record in store.list(cwd=str(settings.work_dir), limit=1):
        folder = settings.data_dir / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.localtime(record.created_at))
        text = export_markdown(store, record.id, system_prompt=agent.system)
        atomic_write(folder / f"{stamp}-{record.id[:8]}.md", text.encode("utf-8"))
