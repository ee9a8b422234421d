"""Skills as slash commands: advertised with ``available_commands_update``; a prompt that starts
with ``/name`` gets that skill's instructions in front of the rest of its text."""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from openheim.errors import OpenheimError
from openheim.messages import Message, TextBlock
from openheim.skills import SkillsManager


def available_commands(skills: SkillsManager) -> list[AvailableCommand]:
    return [
        AvailableCommand(
            name=info.name,
            description=info.description or f"Use the {info.name} skill",
            input=AvailableCommandInput(
                root=UnstructuredCommandInput(hint="what to do with this skill")
            ),
        )
        for info in skills.available()
    ]


def expand(message: Message, skills: SkillsManager) -> Message:
    """``/name rest`` → the skill's instructions, then ``rest``; other prompts are unchanged."""
    first = message.content[0] if message.content else None
    if not isinstance(first, TextBlock) or not first.text.startswith("/"):
        return message
    name, _, rest = first.text[1:].partition(" ")
    if name not in {info.name for info in skills.available()}:
        return message
    try:
        skill = skills.load(name)
    except OpenheimError:
        return message
    text = f'<skill name="{skill.name}">\n{skill.marked_body().strip()}\n</skill>\n\n{rest.strip()}'
    return Message("user", (TextBlock(text), *message.content[1:]))
