"""A session's provider: the configured adapter, retried, fitted to its context window, speaking
the envelope protocol where tools must travel as text, and its fallback chain."""

from __future__ import annotations

import functools

from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.envelope import EnvelopeProvider, protocol_for
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
    if protocol_for(chosen.kind, chosen.tool_protocol) == "envelope":
        provider = EnvelopeProvider(provider, compact=chosen.small)
    return ContextFitter(provider, functools.partial(context_window, chosen))
