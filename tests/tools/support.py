"""Call built-in tools the way the agent loop does: validate the arguments, then call."""

from __future__ import annotations

from typing import Any

from openheim.tools.base import Tool, ToolContext, ToolOutput


async def call(tool: Tool, ctx: ToolContext, **arguments: Any) -> ToolOutput:
    """Parse ``arguments`` with the tool's model and run it."""
    return await tool.call(tool.parse(arguments), ctx)


async def ok(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    """The content of a call that must succeed."""
    output = await call(tool, ctx, **arguments)
    assert not output.is_error, output.content
    return output.content
