"""Slash commands on the wire: the registry's commands ACP offers (``runtime.commands``:
``/compact``, ``/pin``, ``/undo``), then the skills and the prompt templates
(``runtime.prompt_commands``), advertised with ``available_commands_update``; and a prompt
that is one of the registry's commands run as the registry runs it."""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from openheim.errors import UndoRefused
from openheim.messages import Message, TextBlock
from openheim.prompts.library import NamedPrompt
from openheim.runtime import Session, commands, prompt_commands


def _input(hint: str) -> AvailableCommandInput:
    return AvailableCommandInput(root=UnstructuredCommandInput(hint=hint))


def available_commands(prompts: prompt_commands.PromptCommands) -> list[AvailableCommand]:
    """The registry's ACP commands, then the skills, then the templates."""
    own = [
        AvailableCommand(
            name=spec.name,
            description=spec.help[:1].upper() + spec.help[1:],
            input=_input(spec.takes) if spec.takes else None,
        )
        for spec in commands.offered("acp")
    ]
    skills = [
        AvailableCommand(
            name=info.name,
            description=info.description or f"Use the {info.name} skill",
            input=_input("what to do with this skill"),
        )
        for info in prompts.skill_commands()
    ]
    templates = [
        AvailableCommand(
            name=prompt.name,
            description=_described(prompt),
            input=_input("[ARG=VALUE ...] the text for {{input}}"),
        )
        for prompt in prompts.template_commands()
    ]
    return own + skills + templates


def _described(prompt: NamedPrompt) -> str:
    about = prompt.description or f"The {prompt.name} prompt"
    return about if prompt.trusted else f"{about} (untrusted project prompt)"


def command_of(message: Message) -> commands.Invocation | None:
    """The registry command a prompt is: only its text, ``/compact`` or ``/undo 2``. Any
    other ``/word`` is a prompt (a skill or template is expanded before it is sent)."""
    if len(message.content) != 1 or not isinstance(message.content[0], TextBlock):
        return None
    parsed = commands.parse(message.content[0].text, "acp")
    return parsed if isinstance(parsed, commands.Invocation) else None


async def run_command(command: commands.Invocation, session: Session) -> str:
    """Run ``command`` on ``session``; what to tell the user. An undo that is refused (files
    changed outside openheim, too few turns) is told, not an error."""
    try:
        return (await command.run(session)).text
    except UndoRefused as err:
        hint = (err.hint or "").replace("--force", "/undo --force")
        return f"undo refused: {err.message}" + (f"\n{hint}" if hint else "")
