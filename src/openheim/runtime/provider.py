"""A session's provider: the configured adapter, retried, fitted to its context window, speaking
the envelope protocol where tools must travel as text, and its fallback chain."""

from __future__ import annotations

import functools

from openheim.config.load import Settings
from openheim.config.providers import CLI_KINDS, LOCAL_KINDS, resolve_provider
from openheim.providers import create_provider
from openheim.providers.base import Provider, ProviderSettings
from openheim.providers.context import ContextFitter
from openheim.providers.fallback import FallbackProvider
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.providers.windows import context_window


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
    if _speaks_envelope(chosen):
        from openheim.envelope import EnvelopeProvider

        provider = EnvelopeProvider(provider, compact=chosen.small)
    return ContextFitter(provider, functools.partial(context_window, chosen))


def _speaks_envelope(chosen: ProviderSettings) -> bool:
    """Whether the provider takes tools as fenced JSON (``openheim.envelope.protocol_for``); a
    provider of a hosted kind with no ``tool_protocol`` speaks native tools, and is told so
    without importing the envelope package."""
    if chosen.tool_protocol is None and chosen.kind not in LOCAL_KINDS | CLI_KINDS:
        return False
    from openheim.envelope import protocol_for

    return protocol_for(chosen.kind, chosen.tool_protocol) == "envelope"
