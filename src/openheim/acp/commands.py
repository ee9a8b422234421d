"""Skills as slash commands on the wire: advertised with ``available_commands_update``; what a
command does is ``openheim.skills.expand_command``."""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

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
