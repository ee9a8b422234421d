"""Skills as slash commands: ``/name rest`` puts the skill in front of the rest; anything else
is sent as typed."""

from __future__ import annotations

from openheim.errors import ConfigError
from openheim.messages import ImageBlock, Message, TextBlock
from openheim.skills import Skill, SkillsManager, expand_command
from tests.skills.conftest import Layout


def manager(layout: Layout) -> SkillsManager:
    layout.user("review.md", "---\ndescription: Review a change\n---\n\nBe thorough.\n\n")
    return SkillsManager(layout.data_dir, layout.project, True)


def test_a_command_puts_the_skill_in_front_of_the_rest(layout: Layout) -> None:
    image = ImageBlock("aGk=", "image/png")
    message = Message("user", (TextBlock("/review  the last commit "), image))
    expanded = expand_command(message, manager(layout))
    assert expanded.role == "user"
    assert expanded.content == (
        TextBlock('<skill name="review">\nBe thorough.\n</skill>\n\nthe last commit'),
        image,
    )


def test_a_command_alone_still_gives_the_skill(layout: Layout) -> None:
    expanded = expand_command(Message.user("/review"), manager(layout))
    assert expanded.text == '<skill name="review">\nBe thorough.\n</skill>\n\n'


def test_prompts_that_are_not_commands_are_sent_as_typed(layout: Layout) -> None:
    skills = manager(layout)
    for message in (
        Message.user("please /review this"),  # not at the start
        Message.user("/unknown do it"),  # no such skill
        Message.user("/etc/hosts is broken"),  # a path, not a skill
        Message("user", (ImageBlock("aGk=", "image/png"), TextBlock("/review"))),
        Message("user", ()),
    ):
        assert expand_command(message, skills) is message


class Vanishing(SkillsManager):
    """A skill listed a moment ago that is gone when it is loaded."""

    def load(self, name: str) -> Skill:
        raise ConfigError(f"unknown skill {name!r}", hint="add it again")


def test_a_skill_gone_between_listing_and_loading_leaves_the_prompt_as_typed(
    layout: Layout,
) -> None:
    layout.user("review.md", "Be thorough.\n")
    skills = Vanishing(layout.data_dir, layout.project, True)
    assert [info.name for info in skills.available()] == ["review"]
    message = Message.user("/review now")
    assert expand_command(message, skills) is message
