"""Slash commands on the wire, advertised with ``available_commands_update``: the built-in
``/compact``, ``/pin`` and ``/undo``, which the agent does itself, then the skills (their
expansion is ``openheim.skills.expand_command``), then the prompt templates
(``openheim.prompts.commands``)."""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from openheim.api import Session
from openheim.errors import UndoRefused
from openheim.events import compaction_line
from openheim.messages import Message, TextBlock
from openheim.prompts import NamedPrompt, PromptLibrary
from openheim.prompts.commands import expand_template_command, templates
from openheim.runtime.compaction import pin_prompt, pinned_line
from openheim.runtime.undo import undo_arguments
from openheim.skills import SkillsManager, expand_command

BUILTIN = {
    "compact": "Summarise the older turns now (the stored history keeps them)",
    "pin": "Keep your latest prompt verbatim when the session is compacted",
    "undo": "Restore the files of the last turn(s) and rewind the conversation to before them",
}
"""The agent's own commands; a skill of the same name is not offered as a command."""

_INPUTS = {
    "undo": AvailableCommandInput(root=UnstructuredCommandInput(hint="[TURNS] [--force]")),
}
"""What a built-in command takes after its name (the others take nothing)."""


def available_commands(skills: SkillsManager, prompts: PromptLibrary) -> list[AvailableCommand]:
    own = [
        AvailableCommand(name=name, description=about, input=_INPUTS.get(name))
        for name, about in BUILTIN.items()
    ]
    return own + _skill_commands(skills) + _template_commands(prompts, skills)


def _template_commands(prompts: PromptLibrary, skills: SkillsManager) -> list[AvailableCommand]:
    taken = {*BUILTIN, *(info.name for info in skills.available())}
    return [
        AvailableCommand(
            name=prompt.name,
            description=_described(prompt),
            input=AvailableCommandInput(
                root=UnstructuredCommandInput(hint="[ARG=VALUE ...] the text for {{input}}")
            ),
        )
        for prompt in templates(prompts, taken)
    ]


def _described(prompt: NamedPrompt) -> str:
    about = prompt.description or f"The {prompt.name} prompt"
    return about if prompt.trusted else f"{about} (untrusted project prompt)"


def expand_slash(message: Message, skills: SkillsManager, prompts: PromptLibrary) -> Message:
    """A ``/skill`` or ``/template`` prompt expanded (skills first); others as they are."""
    message = expand_command(message, skills)
    first = message.content[0] if message.content else None
    if not isinstance(first, TextBlock):
        return message
    taken = {*BUILTIN, *(info.name for info in skills.available())}
    expanded = expand_template_command(first.text, prompts, taken)
    if expanded is None:
        return message
    return Message("user", (TextBlock(expanded), *message.content[1:]))


def _skill_commands(skills: SkillsManager) -> list[AvailableCommand]:
    return [
        AvailableCommand(
            name=info.name,
            description=info.description or f"Use the {info.name} skill",
            input=AvailableCommandInput(
                root=UnstructuredCommandInput(hint="what to do with this skill")
            ),
        )
        for info in skills.available()
        if info.name not in BUILTIN
    ]


def builtin_command(message: Message) -> tuple[str, str] | None:
    """The built-in command a prompt is (only its text, ``/compact`` or ``/undo 2``) and the
    rest of its text, if any."""
    if len(message.content) != 1 or not isinstance(message.content[0], TextBlock):
        return None
    text = message.content[0].text.strip()
    name, _, rest = text.partition(" ")
    if not name.startswith("/") or name[1:] not in BUILTIN or (rest and name[1:] not in _INPUTS):
        return None
    return name[1:], rest.strip()


async def run_builtin(name: str, arg: str, session: Session) -> str:
    """Do the built-in command ``name`` on ``session``; what to tell the user. An undo that
    is refused (files changed outside openheim, too few turns) is told, not an error."""
    if name == "pin":
        return pinned_line(pin_prompt(session))
    if name == "undo":
        turns, force = undo_arguments(arg)
        try:
            return (await session.undo(turns, force=force)).summary()
        except UndoRefused as err:
            hint = (err.hint or "").replace("--force", "/undo --force")
            return f"undo refused: {err.message}" + (f"\n{hint}" if hint else "")
    done = await session.compact()
    return "nothing to compact yet" if done is None else compaction_line(done)
