"""Skills as slash commands: a prompt that starts with ``/name`` gets that skill's instructions
in front of the rest of its text.

Every surface that takes typed prompts expands them through ``runtime.prompt_commands``, which
calls these, so a command means the same everywhere. A prompt whose ``/word`` names no
available skill, or a skill that cannot be read, is sent as typed.
"""

from __future__ import annotations

from openheim.errors import OpenheimError
from openheim.skills.manager import SkillsManager


def expand_skill(text: str, skills: SkillsManager) -> str | None:
    """``text`` with the skill it names expanded, or None when it names no available skill."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    if name not in {info.name for info in skills.available()}:
        return None
    try:
        skill = skills.load(name)
    except OpenheimError:
        return None
    return f'<skill name="{skill.name}">\n{skill.marked_body().strip()}\n</skill>\n\n{rest.strip()}'
