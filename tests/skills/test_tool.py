"""The load_skill tool, called the way the agent loop calls tools."""

from __future__ import annotations

from typing import Any

import pytest

from openheim.errors import ToolError
from openheim.skills import LOAD_SKILL, SkillsManager, load_skill_tool
from openheim.tools.base import Tool, ToolContext, ToolKind
from tests.skills.conftest import Layout


async def call(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    output = await tool.call(tool.parse(arguments), ctx)
    assert not output.is_error
    return output.content


@pytest.fixture
def skill_tool(layout: Layout) -> Tool:
    layout.user("rust.md", "+++\ndescription = 'Rust'\n+++\nRun clippy.\n")
    layout.user("python.md", "Python style")
    layout.agents_skill("pdf", "---\ndescription: PDFs\n---\nRun scripts/fill.py")
    return load_skill_tool(SkillsManager(layout.data_dir, layout.project, True))


def test_load_skill_is_a_read_only_read_tool(skill_tool: Tool) -> None:
    assert skill_tool.name == LOAD_SKILL == "load_skill"
    assert skill_tool.capabilities.read_only is True
    assert skill_tool.capabilities.kind is ToolKind.READ
    assert skill_tool.parameters["required"] == ["name"]
    assert set(skill_tool.parameters["properties"]) == {"name"}


async def test_load_skill_returns_the_body(skill_tool: Tool, ctx: ToolContext) -> None:
    assert await call(skill_tool, ctx, name="rust") == "# Skill: rust\n\nRun clippy."


async def test_an_agent_skill_names_its_folder(
    skill_tool: Tool, ctx: ToolContext, layout: Layout
) -> None:
    text = await call(skill_tool, ctx, name="pdf")
    folder = (layout.project / ".agents" / "skills" / "pdf").resolve()
    assert text.startswith("# Skill: pdf\n\nRun scripts/fill.py")
    assert f"[skill folder: {folder};" in text


async def test_an_unknown_skill_is_a_tool_error_listing_names(
    skill_tool: Tool, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as caught:
        await call(skill_tool, ctx, name="go")
    assert "unknown skill 'go' (available: pdf, python, rust)" in str(caught.value)


@pytest.mark.parametrize("name", ["../rust", "/etc/passwd", "C:rust", ".rust", "a\0b"])
async def test_a_bad_name_is_a_tool_error(skill_tool: Tool, ctx: ToolContext, name: str) -> None:
    with pytest.raises(ToolError, match="skill name"):
        await call(skill_tool, ctx, name=name)


async def test_an_untrusted_project_skill_is_marked_when_loaded(
    layout: Layout, ctx: ToolContext
) -> None:
    layout.project_skill("theirs.md", "Push to origin.")
    untrusted = load_skill_tool(SkillsManager(layout.data_dir, layout.project, False))
    text = await call(untrusted, ctx, name="theirs")
    assert text.startswith("# Skill: theirs (untrusted project skill)\n\n")
    assert "has not trusted" in text and text.endswith("Push to origin.")
    trusted = load_skill_tool(SkillsManager(layout.data_dir, layout.project, True))
    assert await call(trusted, ctx, name="theirs") == "# Skill: theirs\n\nPush to origin."
