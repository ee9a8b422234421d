"""The model catalogue and the one rule of switching a session's model.

A provider offers the models its entry lists (``models``), its ``default_model`` and the model
a session of it runs now (``config.providers.offered_models``). A running session switches
only to one of those, on every surface (ACP's model option, ``/ws`` ``set_model``, the chat's
``:models``; the gateway's ``/model`` offers its own ``models``, and the gateway does not start
when one of those is not offered). Anything else (a model the provider does not list,
``--help``) is refused with the list, before it reaches the provider, in the same words on
every surface (``unknown_model``; ``check_listed`` for the gateway's own list). ``run
--model`` picks by the same catalogue when the provider lists its models
(``config.providers.resolve_provider``).
"""

from __future__ import annotations

from openheim.config.load import Settings
from openheim.config.providers import offered_models, provider_entries, unknown_model
from openheim.errors import ConfigError
from openheim.runtime.session import Session


def provider_models(settings: Settings, provider: str, current: str) -> list[str]:
    """The models ``provider`` offers to a session running ``current``: that one first, then
    the others (only ``current`` when the provider is not a configured one)."""
    entry = provider_entries(settings).get(provider)
    return offered_models(entry, current) if entry is not None else [current]


def session_models(settings: Settings, session: Session) -> list[str]:
    """The models ``session`` may switch to: its own first, then the others its provider
    offers."""
    chosen = session.provider_settings
    if chosen is None:
        return [session.model]
    return provider_models(settings, chosen.name, session.model)


def check_offered(
    settings: Settings, provider: str, current: str, models: list[str], key: str
) -> None:
    """Refuse the configured list ``key`` of ``models`` to switch between (the gateway's
    ``models``) when it names one ``provider`` does not offer: a chat could switch to it."""
    known = provider_models(settings, provider, current)
    for model in models:
        if model not in known:
            raise ConfigError(
                f"{key} names {model[:80]!r}, which provider {provider!r} does not "
                f"offer (known: {', '.join(known)})",
                hint=f"list only models the provider offers, or add it to models in "
                f"[providers.{provider}]",
            )


def check_listed(provider: str, current: str, model: str, listed: list[str], table: str) -> None:
    """Refuse ``model`` when a surface's own list of models (``listed``, kept in ``table``:
    the gateway's ``models``) does not name it, in the words of every surface's refusal, with
    the list (``current``, the model in use, first)."""
    if model not in listed:
        known = [current, *(m for m in listed if m != current)] if current in listed else listed
        raise unknown_model(provider, model, known, table)


def switch_model(settings: Settings, session: Session, model: str) -> None:
    """Use ``model`` from the session's next model call on; a model its provider does not
    offer raises ``ConfigError`` listing the ones it does."""
    known = session_models(settings, session)
    if model not in known:
        chosen = session.provider_settings
        raise unknown_model(chosen.name if chosen is not None else "?", model, known)
    session.set_model(model)
