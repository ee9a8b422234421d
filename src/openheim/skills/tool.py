"""The ``load_skill`` tool: the model reads a listed skill's instructions when it needs them.

The system prompt lists skills by name and one-line description only, so a session pays for a
skill's full text only once it is used. The envelope protocol's ``skill`` actions call this tool.
"""

from __future__ import annotations

from typing import Annotated

from openheim.errors import ConfigError, ToolError
from openheim.skills.manager import Skill, SkillsManager, SkillSource
from openheim.tools.base import Tool, ToolKind
from openheim.tools.decorator import tool

LOAD_SKILL = "load_skill"


def render_skill(skill: Skill) -> str:
    """A skill as the model reads it (marked when its project is untrusted); Agent Skills name
    their folder for the files they cite."""
    text = f"# Skill: {skill.heading()}\n\n{skill.marked_body()}"
    if skill.source is SkillSource.AGENTS:
        text += (
            f"\n\n[skill folder: {skill.path.parent}; "
            "paths in these instructions are relative to it]"
        )
    return text


def load_skill_tool(manager: SkillsManager) -> Tool:
    """A read-only ``load_skill(name)`` tool backed by ``manager``."""

    @tool(name=LOAD_SKILL, read_only=True, kind=ToolKind.READ)
    def load_skill(
        name: Annotated[str, "The skill's name, exactly as listed under Skills in the prompt"],
    ) -> str:
        """Load a skill: returns its full instructions. The system prompt lists the available
        skills with a one-line description each; load one when the task matches it, then follow
        its instructions."""
        try:
            return render_skill(manager.load(name))
        except ConfigError as err:
            raise ToolError(err.message, hint=err.hint) from None

    return load_skill
