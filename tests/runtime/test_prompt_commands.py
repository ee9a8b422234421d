"""Skills and templates as commands: offered by name (never under a registry command's name),
expanded into a message's first text block with its other blocks kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import ConfigError
from openheim.messages import ImageBlock, Message, TextBlock
from openheim.prompts.library import PromptLibrary
from openheim.runtime.prompt_commands import PromptCommands
from openheim.skills import SkillsManager


def commands(tmp_path: Path) -> PromptCommands:
    data = tmp_path / "data"
    for folder, name, text in [
        ("skills", "review", "Be thorough."),
        ("skills", "auth", "A skill named like the gateway's /auth."),
        ("prompts", "fix", "---\narguments: lang\n---\nFix this {{lang}}: {{input}}"),
        ("prompts", "review", "A template named like a skill: {{input}}"),
        ("prompts", "compact", "A template named like a command: {{input}}"),
        ("prompts", "plain", "no placeholders"),
    ]:
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / f"{name}.md").write_text(text)
    return PromptCommands(SkillsManager(data, None, True), PromptLibrary(data, None, True))


def test_names_leave_out_command_names_and_templates_shadowed_by_skills(tmp_path: Path) -> None:
    assert commands(tmp_path).names() == ["review", "fix"]


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("/review the diff", '<skill name="review">\nBe thorough.\n</skill>\n\nthe diff'),
        ("/fix lang=go the loop", "Fix this go: the loop"),
        ("/auth open sesame", "/auth open sesame"),
        ("/compact now", "/compact now"),
        ("/plain hi", "/plain hi"),
        ("/usr/bin is gone", "/usr/bin is gone"),
        ("review /review", "review /review"),
    ],
)
def test_expand_text(tmp_path: Path, typed: str, sent: str) -> None:
    assert commands(tmp_path).expand_text(typed) == sent


def test_a_message_keeps_its_other_blocks(tmp_path: Path) -> None:
    image = ImageBlock("aGk=", "image/png")
    message = Message("user", (TextBlock("/fix lang=go x"), image))
    assert commands(tmp_path).expand(message).content == (TextBlock("Fix this go: x"), image)
    plain = Message("user", (image, TextBlock("/fix lang=go x")))
    assert commands(tmp_path).expand(plain) is plain


def test_a_missing_template_argument_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs the argument lang"):
        commands(tmp_path).expand_text("/fix no language")
