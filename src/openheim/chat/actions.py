"""What each chat command of the registry (``runtime.commands``) does, the same for the
terminal UI and the plain REPL: the session commands run as the registry runs them, the
others act on the ``Chat``. A surface handles its own commands first (a picker, a theme) and
hands the rest here."""

from __future__ import annotations

from dataclasses import dataclass

from openheim.chat import info
from openheim.chat.session import Chat
from openheim.config.providers import provider_entries
from openheim.errors import ConfigError
from openheim.runtime import commands, replay


@dataclass
class Outcome:
    """What a command leaves to show: text, a conversation to show again, or the end."""

    text: str = ""
    quit: bool = False
    clear: bool = False
    replay: list[replay.Replayed] | None = None


async def execute(chat: Chat, command: commands.Invocation, surface: commands.Surface) -> Outcome:
    """Run ``command`` against the chat; a bad argument raises ``ConfigError``."""
    name, arg = command.name, command.argument
    if command.spec.run is not None:
        done = await command.run(chat.session)
        shown = list(replay.replay_events(chat.session.history)) if name == "undo" else None
        return Outcome(done.text, clear=shown is not None, replay=shown)
    if name == "help":
        return Outcome(chat.help(surface))
    simple = _SIMPLE.get(name)
    if simple is not None:
        return Outcome(simple(chat, arg))
    if name == "quit":
        return Outcome(quit=True)
    if name == "clear":
        return Outcome(clear=True)
    if name == "new":
        await chat.new()
        return Outcome("new session", clear=True)
    if name == "sessions":
        return await _sessions(chat, arg)
    if name == "models":
        return await _models(chat, arg)
    if name == "agent":
        if not arg:
            raise ConfigError("agent needs a name", hint="see `openheim agents list`")
        await chat.use_agent(arg)
        return Outcome(f"agent {arg} runs this session")
    if name == "skill":
        await chat.activate_skill(arg)
        return Outcome(f"skill {arg} is active")
    if name == "memory":
        return Outcome(await info.memory_text(chat.settings, arg))
    raise RuntimeError(f"the chat does not do :{name}; its surface does")


def _skills(chat: Chat, arg: str) -> str:
    found = chat.skills.available()
    if not found:
        return "no skills (add Markdown files to data_dir/skills/)"
    return "\n".join(f"{s.name}: {s.description}" for s in found)


def _export(chat: Chat, arg: str) -> str:
    return f"exported to {info.export_session(chat, arg)}"


_SIMPLE = {
    "config": lambda chat, arg: info.config_text(chat.settings),
    "mcp": lambda chat, arg: info.mcp_text(chat),
    "cost": lambda chat, arg: info.cost_text(chat),
    "skills": _skills,
    "export": _export,
}


async def _sessions(chat: Chat, arg: str) -> Outcome:
    if not arg:
        records = info.sessions_of(chat.settings)
        lines = [info.session_line(r) for r in records] or ["no stored sessions"]
        return Outcome("\n".join([*lines, "restore one with :sessions ID"]))
    shown, warning = await chat.restore(arg)
    text = f"restored session {chat.session.id}" + (f"\nwarning: {warning}" if warning else "")
    return Outcome(text, clear=True, replay=shown)


async def _models(chat: Chat, arg: str) -> Outcome:
    if not arg:
        pairs = info.model_choices(chat.settings)
        current = (chat.provider, chat.session.model)
        lines = [f"{'*' if pair == current else ' '} {pair[0]}/{pair[1]}" for pair in pairs]
        return Outcome("\n".join([*lines, "switch with :models PROVIDER/MODEL or :models MODEL"]))
    provider, model = split_model(chat, arg)
    await chat.switch_model(provider, model)
    return Outcome(f"model: {provider}/{model}")


def split_model(chat: Chat, arg: str) -> tuple[str, str]:
    """``PROVIDER/MODEL`` when the part before the first ``/`` is a provider, else a model of
    the current provider (model names may hold slashes themselves)."""
    head, _, rest = arg.partition("/")
    if rest and head in provider_entries(chat.settings):
        return head, rest
    return chat.provider, arg
