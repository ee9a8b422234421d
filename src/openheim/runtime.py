"""Assemble a runnable agent from settings: provider, tools, sandbox, system prompt.

Surfaces (the CLI today; ACP and the server later) call this instead of wiring parts themselves,
so they stay thin translations of the event stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from openheim.approval import AllowAll, ApprovalGate, Resolver
from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.context import ContextFitter
from openheim.envelope import EnvelopeProvider, protocol_for
from openheim.errors import ConfigError
from openheim.loop import Agent
from openheim.providers import create_provider
from openheim.providers.base import Provider, ProviderSettings
from openheim.providers.fallback import FallbackProvider
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.builtin import builtin_tools
from openheim.tools.env import child_env
from openheim.tools.sandbox import PathSandbox
from openheim.usage import DEFAULT_PRICES, Meter, Price

DEFAULT_SYSTEM_PROMPT = """\
You are openheim, an AI agent working in the user's project directory.
Use the tools you are given to inspect and change files instead of guessing: read a file before \
editing it, keep changes minimal, and say briefly what you did. If a tool fails, read its error \
and adjust instead of repeating the same call."""


def system_prompt(settings: Settings) -> str:
    """``data_dir/system.md`` when present, else the built-in prompt, plus where we work."""
    custom = settings.data_dir / "system.md"
    base = DEFAULT_SYSTEM_PROMPT
    if custom.is_file():
        base = custom.read_text(encoding="utf-8").strip() or base
    return f"{base}\n\nWorking directory: {settings.work_dir}"


def select_tools(settings: Settings, patterns: Sequence[str] | None) -> ToolSet:
    tools = builtin_tools(allow_shell=settings.allow_shell)
    if patterns is None:
        return tools
    selected = tools.select(patterns)
    if not selected and patterns:
        raise ConfigError(
            f"--tools {','.join(patterns)} matches no tool (available: {', '.join(tools.names)})",
            hint="use fnmatch patterns such as 'read_*,search'",
        )
    return selected


def build_provider(settings: Settings, chosen: ProviderSettings) -> Provider:
    """The provider with its retry wrapper, and its fallback chain when one is configured."""
    chain: list[tuple[Provider, str]] = [(_member(chosen), chosen.model)]
    for name in chosen.fallback:
        backup = resolve_provider(settings, name=name)
        chain.append((_member(backup), backup.model))
    return chain[0][0] if len(chain) == 1 else FallbackProvider(chain)


def _member(chosen: ProviderSettings) -> Provider:
    """One chain member: the adapter, retried, speaking the envelope protocol where tools must
    travel as text, and fitted to its own context window."""
    policy = RetryPolicy(max_retries=chosen.max_retries)
    provider: Provider = RetryingProvider(create_provider(chosen), policy)
    if protocol_for(chosen.kind, chosen.tool_protocol) == "envelope":
        provider = EnvelopeProvider(provider)
    return ContextFitter(provider, chosen.context_window)


def make_meter(settings: Settings) -> Meter:
    """The usage meter: default prices overlaid with ``[prices]``, and the budget caps."""
    prices = dict(DEFAULT_PRICES)
    for model, entry in settings.prices.items():
        prices[model] = Price(entry.input, entry.output, entry.cache_read, entry.cache_write)
    return Meter(prices, settings.max_cost, settings.max_tokens_per_session)


@contextlib.asynccontextmanager
async def open_agent(
    settings: Settings,
    *,
    tool_patterns: Sequence[str] | None = None,
    gate: ApprovalGate | None = None,
    resolver: Resolver | None = None,
    provider_settings: ProviderSettings | None = None,
) -> AsyncIterator[Agent]:
    """An Agent for ``settings``; the provider's connections are closed on exit."""
    chosen = provider_settings or resolve_provider(settings)
    tools = select_tools(settings, tool_patterns)
    provider = build_provider(settings, chosen)
    work_dir = Path(settings.work_dir)
    context = ToolContext(PathSandbox(work_dir), work_dir, child_env())
    agent = Agent(
        provider=provider,
        model=chosen.model,
        tools=tools,
        system=system_prompt(settings),
        gate=gate or AllowAll(),
        resolver=resolver,
        context=context,
        max_iterations=settings.max_iterations,
        max_tokens=chosen.max_tokens,
        meter=make_meter(settings),
    )
    try:
        yield agent
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
