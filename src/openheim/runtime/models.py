"""The model catalogue and the one rule of switching a session's model.

A provider offers the models its entry lists (``models``), its ``default_model`` and the model
a session of it runs now (``config.providers.offered_models``). A running session switches
only to one of those, on every surface (ACP's model option, ``/ws`` ``set_model``, the chat's
``:models``); anything else (a model the provider does not list, ``--help``) is refused with
the list, before it reaches the provider. ``run --model`` picks by the same catalogue when the
provider lists its models (``config.providers.resolve_provider``).
"""

from __future__ import annotations

from openheim.config.load import Settings
from openheim.config.providers import offered_models, provider_entries, unknown_model
from openheim.runtime.session import Session


def session_models(settings: Settings, session: Session) -> list[str]:
    """The models ``session`` may switch to: its own first, then the others its provider
    offers (only its own when its provider is not a configured one)."""
    chosen = session.provider_settings
    entry = provider_entries(settings).get(chosen.name) if chosen is not None else None
    return offered_models(entry, session.model) if entry is not None else [session.model]


def switch_model(settings: Settings, session: Session, model: str) -> None:
    """Use ``model`` from the session's next model call on; a model its provider does not
    offer raises ``ConfigError`` listing the ones it does."""
    known = session_models(settings, session)
    if model not in known:
        chosen = session.provider_settings
        raise unknown_model(chosen.name if chosen is not None else "?", model, known)
    session.set_model(model)
