"""A session's provider: the configured adapter, retried, guarded against replies that repeat
themselves (``openheim.providers.repetition``), fitted to its context window, speaking the envelope
protocol where tools must travel as text, and its fallback chain. An HTTP adapter
uses the client its session lends it (``runtime.clients``), when one is lent."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from openheim.config.load import Settings
from openheim.config.providers import CLI_KINDS, LOCAL_KINDS, resolve_provider
from openheim.providers import create_provider, takes_shared_client
from openheim.providers.base import Provider, ProviderSettings
from openheim.providers.context import ContextFitter
from openheim.providers.fallback import FallbackProvider
from openheim.providers.repetition import RepetitionGuard
from openheim.providers.retry import RetryingProvider, RetryPolicy
from openheim.providers.windows import context_window

if TYPE_CHECKING:
    import httpx

Lender = Callable[[ProviderSettings], "httpx.AsyncClient"]
"""Lends the HTTP client for a provider's endpoint; it is given back when the session closes."""


def build_provider(
    settings: Settings, chosen: ProviderSettings, lend: Lender | None = None
) -> Provider:
    """The provider with its retry wrapper, and its fallback chain when one is configured;
    the HTTP adapters among them use clients from ``lend`` when given."""
    chain: list[tuple[Provider, str]] = [(_member(chosen, lend), chosen.model)]
    for name in chosen.fallback:
        backup = resolve_provider(settings, name=name)
        chain.append((_member(backup, lend), backup.model))
    return chain[0][0] if len(chain) == 1 else FallbackProvider(chain)


def _member(chosen: ProviderSettings, lend: Lender | None) -> Provider:
    """One chain member: the adapter, retried, stopped once its reply repeats itself, speaking
    the envelope protocol where tools must travel as text, and fitted to its own context
    window."""
    policy = RetryPolicy(max_retries=chosen.max_retries)
    lent = lend(chosen) if lend is not None and takes_shared_client(chosen.kind) else None
    provider: Provider = RepetitionGuard(RetryingProvider(create_provider(chosen, lent), policy))
    if _speaks_envelope(chosen):
        from openheim.envelope import EnvelopeProvider

        started = chosen.kind == "llama_cpp"  # continues a last assistant message
        provider = EnvelopeProvider(provider, compact=chosen.small, starts_answer=started)
    return ContextFitter(provider, functools.partial(context_window, chosen))


def _speaks_envelope(chosen: ProviderSettings) -> bool:
    """Whether the provider takes tools as fenced JSON (``openheim.envelope.protocol_for``); a
    provider of a hosted kind with no ``tool_protocol`` speaks native tools, and is told so
    without importing the envelope package."""
    if chosen.tool_protocol is None and chosen.kind not in LOCAL_KINDS | CLI_KINDS:
        return False
    from openheim.envelope import protocol_for

    return protocol_for(chosen.kind, chosen.tool_protocol) == "envelope"
