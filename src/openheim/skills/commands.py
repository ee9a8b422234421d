"""Skills as slash commands: a prompt that starts with ``/name`` gets that skill's instructions
in front of the rest of its text.

Every surface that takes typed prompts calls ``expand_command`` on them (the ACP agent today),
and offers ``SkillsManager.available()`` as its commands, so a command means the same
everywhere. A prompt whose ``/word`` names no available skill, or a skill that cannot be read,
is sent as typed.
"""

from __future__ import annotations

from openheim.errors import OpenheimError
from openheim.messages import Message, TextBlock
from openheim.skills.manager import SkillsManager


def expand_command(message: Message, skills: SkillsManager) -> Message:
    """``/name rest`` → the skill's instructions in a ``<skill>`` element, then ``rest``; the
    message's other blocks (images, attachments) follow unchanged. Other prompts are returned
    as they are."""
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
