"""Skills as slash commands: ``/name rest`` puts the skill in front of the rest; anything else
is left as typed (None)."""

from __future__ import annotations

import pytest

from openheim.errors import ConfigError
from openheim.skills import Skill, SkillsManager, expand_skill
from tests.skills.conftest import Layout


def manager(layout: Layout) -> SkillsManager:
    layout.user("review.md", "---\ndescription: Review a change\n---\n\nBe thorough.\n\n")
    return SkillsManager(layout.data_dir, layout.project, True)


def test_a_command_puts_the_skill_in_front_of_the_rest(layout: Layout) -> None:
    expanded = expand_skill("/review  the last commit ", manager(layout))
    assert expanded == '<skill name="review">\nBe thorough.\n</skill>\n\nthe last commit'


def test_a_command_alone_still_gives_the_skill(layout: Layout) -> None:
    assert expand_skill("/review", manager(layout)) == (
        '<skill name="review">\nBe thorough.\n</skill>\n\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        "please /review this",  # not at the start
        "/unknown do it",  # no such skill
        "/etc/hosts is broken",  # a path, not a skill
        "",
    ],
)
def test_prompts_that_are_not_commands_are_left_as_typed(layout: Layout, text: str) -> None:
    assert expand_skill(text, manager(layout)) is None


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
    assert expand_skill("/review now", skills) is None
