"""The chat commands in the terminal UI: pickers for sessions, models and themes, the theme
applied and kept, tool items shown or hidden; the rest as the REPL does them
(``openheim.chat.actions``), their text shown in the conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openheim.chat import info
from openheim.chat.actions import Outcome, execute
from openheim.errors import ConfigError, OpenheimError
from openheim.runtime import commands
from openheim.tui.pickers import Picker
from openheim.tui.theme import save_theme

if TYPE_CHECKING:
    from openheim.tui.app import ChatApp

KEYS = """keys:
  Enter send · Shift+Enter / Ctrl+J newline · Ctrl+U clear · Up/Down history · Tab complete
  / command palette (Up/Down, Tab or Enter complete) · @ attach a file
  Shift+Tab next approval mode · Ctrl+C clear the draft, else cancel the turn, twice quit
  Ctrl+Q quit
  PgUp/PgDn, wheel, j/k (in the conversation) scroll · Esc close an overlay"""


async def run_command(app: ChatApp, command: commands.Invocation) -> None:
    """Do ``command``; an error is one line in the conversation. One that reopens, rewinds or
    compacts the session (``idle`` in the registry) waits until the turn ends."""
    view = app.conversation
    if app.busy and command.spec.idle:
        await view.line(f":{command.name} waits until the turn ends (Ctrl+C cancels it)", "error")
        return
    try:
        outcome = await _ui_command(app, command)
        if outcome is None:
            outcome = await execute(app.chat, command, "tui")
    except OpenheimError as err:
        await view.line(f"error: {err}", "error")
        return
    await show_outcome(app, outcome)


async def show_outcome(app: ChatApp, outcome: Outcome) -> None:
    view = app.conversation
    if outcome.quit:
        await app.action_quit()
        return
    if outcome.clear:
        await view.clear()
    if outcome.replay is not None:
        await view.replay(outcome.replay)
    if outcome.text:
        await view.line(outcome.text, "output")
    app.update_status()


async def _ui_command(app: ChatApp, command: commands.Invocation) -> Outcome | None:
    """The commands the UI does itself; None for the others."""
    name, arg = command.name, command.argument
    if name == "help":
        return Outcome(app.chat.help("tui") + "\n" + KEYS)
    if name == "verbose":
        app.conversation.set_verbose(not app.conversation.verbose)
        return Outcome(f"tool items {'shown' if app.conversation.verbose else 'hidden'}")
    if name == "theme":
        return await _theme(app, arg)
    if name == "sessions" and not arg:
        return await _pick_session(app)
    if name == "models" and not arg:
        return await _pick_model(app)
    return None


async def _theme(app: ChatApp, name: str) -> Outcome | None:
    themes = sorted(app.available_themes)
    if not name:
        picked = await app.push_screen_wait(Picker("theme", [(t, t) for t in themes]))
        if picked is None:
            return Outcome()
        name = picked
    if name not in themes:
        close = commands.suggest(name, themes)
        hint = f"did you mean {close}?" if close else "see :theme for the list"
        raise ConfigError(f"there is no theme named {name!r}", hint=hint)
    app.theme = name
    save_theme(app.chat.settings.home / "config.toml", name)
    return Outcome(f"theme {name} (kept in config.toml)")


async def _pick_session(app: ChatApp) -> Outcome | None:
    records = info.sessions_of(app.chat.settings)
    if not records:
        return Outcome("no stored sessions")
    choices = [(record.id, info.session_line(record)) for record in records]
    picked = await app.push_screen_wait(Picker("restore a session", choices))
    if picked is None:
        return Outcome()
    return await execute(app.chat, _invoke("sessions", picked), "tui")


async def _pick_model(app: ChatApp) -> Outcome | None:
    """The models to pick from, the current one marked and highlighted."""
    pairs = info.model_choices(app.chat.settings)
    current = f"{app.chat.provider}/{app.chat.session.model}"
    values = [f"{p}/{m}" for p, m in pairs]
    choices = [(v, f"● {v} (current)" if v == current else f"  {v}") for v in values]
    picked = await app.push_screen_wait(Picker("model", choices, selected=current))
    if picked is None:
        return Outcome()
    return await execute(app.chat, _invoke("models", picked), "tui")


def _invoke(name: str, argument: str) -> commands.Invocation:
    """The command ``name`` with what a picker chose."""
    spec = commands.find(name, "tui")
    assert spec is not None
    return commands.Invocation(spec, argument)
