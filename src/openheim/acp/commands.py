"""Slash commands on the wire, advertised with ``available_commands_update``: the built-in
``/compact``, which the agent does itself, then the skills, whose expansion is
``openheim.skills.expand_command``."""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from openheim.api import Session
from openheim.events import compaction_line
from openheim.messages import Message, TextBlock
from openheim.skills import SkillsManager

BUILTIN = {"compact": "Summarise the older turns now (the stored history keeps them)"}
"""The agent's own commands; a skill of the same name is not offered as a command."""


def available_commands(skills: SkillsManager) -> list[AvailableCommand]:
    own = [AvailableCommand(name=name, description=about) for name, about in BUILTIN.items()]
    return own + [
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


def builtin_command(message: Message) -> str | None:
    """The built-in command a prompt is (only its text, ``/compact``), if any."""
    if len(message.content) != 1 or not isinstance(message.content[0], TextBlock):
        return None
    text = message.content[0].text.strip()
    return text[1:] if text.startswith("/") and text[1:] in BUILTIN else None


async def run_builtin(name: str, session: Session) -> str:
    """Do the built-in command ``name`` on ``session``; what to tell the user."""
    assert name == "compact"  # the only one, as BUILTIN says
    done = await session.compact()
    return "nothing to compact yet" if done is None else compaction_line(done)
