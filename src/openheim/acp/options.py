"""Session modes (``code``, ``architect``) and the model as a session config option.

Both are sent: ``modes`` for clients that only know ``session/set_mode``, ``configOptions``
(a mode selector and a model selector) for those that speak ``session/set_config_option``.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from openheim.config.load import Settings
from openheim.errors import ConfigError
from openheim.runtime import Session, models

CODE, ARCHITECT = "code", "architect"
MODES = (
    SessionMode(id=CODE, name="Code", description="Every tool: read, edit, run commands"),
    SessionMode(
        id=ARCHITECT, name="Architect", description="Read-only tools: explore and plan, no edits"
    ),
)
MODE_OPTION, MODEL_OPTION = "mode", "model"


def mode_of(session: Session) -> str:
    return ARCHITECT if session.read_only else CODE


def set_mode(session: Session, mode: str) -> None:
    """Switch tools for ``mode``; an unknown mode is invalid params."""
    if mode not in (CODE, ARCHITECT):
        raise RequestError.invalid_params(
            {"reason": f"unknown mode {mode!r}", "modes": [CODE, ARCHITECT]}
        )
    session.set_read_only(mode == ARCHITECT)


def mode_state(session: Session) -> SessionModeState:
    return SessionModeState(current_mode_id=mode_of(session), available_modes=list(MODES))


def set_model(settings: Settings, session: Session, model: str) -> None:
    """Switch the session's model (``runtime.models``); one its provider does not offer is
    invalid params, with the models it does."""
    try:
        models.switch_model(settings, session, model)
    except ConfigError as err:
        known = models.session_models(settings, session)
        raise RequestError.invalid_params({"reason": str(err), "models": known}) from None


def config_options(
    settings: Settings, session: Session
) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    mode = SessionConfigOptionSelect(
        id=MODE_OPTION,
        name="Mode",
        category="mode",
        type="select",
        current_value=mode_of(session),
        options=[SessionConfigSelectOption(value=m.id, name=m.name) for m in MODES],
    )
    model = SessionConfigOptionSelect(
        id=MODEL_OPTION,
        name="Model",
        category="model",
        type="select",
        current_value=session.model,
        options=[
            SessionConfigSelectOption(value=m, name=m)
            for m in models.session_models(settings, session)
        ],
    )
    return [mode, model]


def set_option(settings: Settings, session: Session, option: str, value: str | bool) -> None:
    """``session/set_config_option``: the mode or the model."""
    if not isinstance(value, str):
        raise RequestError.invalid_params({"reason": f"option {option!r} takes a string value"})
    if option == MODE_OPTION:
        set_mode(session, value)
    elif option == MODEL_OPTION:
        set_model(settings, session, value)
    else:
        raise RequestError.invalid_params(
            {"reason": f"unknown config option {option!r}", "options": [MODE_OPTION, MODEL_OPTION]}
        )
