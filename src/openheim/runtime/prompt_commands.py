"""Skills and prompt templates as commands, the same wherever a person types (the REPL, the
terminal UI, ACP, the ``/ws`` agent channel, the chat gateway): ``/skill rest`` puts the
skill's instructions before ``rest``; ``/template ARG=VALUE rest`` expands the template.

A skill or template named like a command of the registry (``runtime.commands.NAMES``) is no
command anywhere, so a word means the same on every surface; a template named like a skill
gives way to the skill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from openheim.config.load import Settings
from openheim.messages import Message, TextBlock
from openheim.prompts.commands import expand_template_command, templates
from openheim.prompts.library import NamedPrompt, PromptLibrary
from openheim.prompts.project import prompts_for
from openheim.runtime.attach import Attacher, mentions
from openheim.runtime.commands import NAMES
from openheim.skills import SkillInfo, SkillsManager, expand_skill, skills_for


@dataclass(frozen=True)
class PromptCommands:
    """The skills and templates a surface offers as commands, and their expansion."""

    skills: SkillsManager
    prompts: PromptLibrary

    @classmethod
    def of(cls, settings: Settings, skills: SkillsManager | None = None) -> PromptCommands:
        """Those of a session run with ``settings`` (``skills`` when the surface holds one)."""
        return cls(skills if skills is not None else skills_for(settings), prompts_for(settings))

    def skill_commands(self) -> list[SkillInfo]:
        return [info for info in self.skills.available() if info.name not in NAMES]

    def template_commands(self) -> list[NamedPrompt]:
        return templates(self.prompts, self._taken())

    def names(self) -> list[str]:
        """The command words: the skills, then the templates."""
        return [
            *(info.name for info in self.skill_commands()),
            *(p.name for p in self.template_commands()),
        ]

    def expand_text(self, text: str) -> str:
        """``text`` with the skill or template it starts with expanded; else as it is. A
        template's missing required argument is a ConfigError naming it."""
        word = text[1:].partition(" ")[0] if text.startswith("/") else ""
        if not word or word in NAMES:
            return text
        skill = expand_skill(text, self.skills)
        if skill is not None:
            return skill
        return expand_template_command(text, self.prompts, self._taken()) or text

    def expand(self, message: Message) -> Message:
        """``message`` with its first text block expanded; its other blocks unchanged."""
        first = message.content[0] if message.content else None
        if not isinstance(first, TextBlock):
            return message
        text = self.expand_text(first.text)
        if text == first.text:
            return message
        return Message("user", (TextBlock(text), *message.content[1:]))

    def _taken(self) -> set[str]:
        return {*NAMES, *(info.name for info in self.skills.available())}


def compose(text: str, attacher: Attacher, expand: Callable[[str], str]) -> str:
    """The prompt a person's typed ``text`` sends, the same on every surface that attaches
    files: ``text`` as typed (its ``@path`` words kept, so the model reads which file is
    which) with its command ``expand``ed (``PromptCommands.expand_text``), then each file it
    mentions. The files are read first, so a refused one stops the prompt before anything
    else; a template's own ``@`` words are never attached: only what the person typed is."""
    attached = [attacher.attach(raw) for raw in mentions(text)]
    return "\n\n".join(part for part in (expand(text), *attached) if part)
