"""Skills: Markdown instructions the agent can be given up front or load on demand.

``skills_for(settings)`` (or ``SkillsManager`` directly) finds them: the user's
``data_dir/skills``, the project's ``.openheim/skills`` and ``.agents/skills/<name>/SKILL.md``.
``load_skill_tool`` lets the model read one by name, ``openheim.prompts.builder.PromptBuilder``
lists
them in the system prompt, and ``expand_skill`` runs one as a slash command (``/name ...``).
"""

from __future__ import annotations

from openheim.skills.commands import expand_skill
from openheim.skills.manager import Skill, SkillInfo, SkillsManager, SkillSource
from openheim.skills.names import validate_name
from openheim.skills.setup import find_repo_root, skills_for
from openheim.skills.tool import LOAD_SKILL, load_skill_tool

__all__ = [
    "LOAD_SKILL",
    "Skill",
    "SkillInfo",
    "SkillSource",
    "SkillsManager",
    "expand_skill",
    "find_repo_root",
    "load_skill_tool",
    "skills_for",
    "validate_name",
]
