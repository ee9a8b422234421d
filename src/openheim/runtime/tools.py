"""The tools a session offers: built-in, skill, memory, staging, web, MCP, delegation and the
caller's own, narrowed by ``--tools`` patterns and by a main profile's allow-list."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openheim.agents.profiles import AgentProfile
from openheim.config.load import Settings
from openheim.errors import ConfigError
from openheim.events import Notice
from openheim.memory import memory_tools, open_memory
from openheim.providers.base import NamedTool, ToolChoice
from openheim.runtime.subagents import Spawner
from openheim.skills import SkillsManager, load_skill_tool
from openheim.tools.base import Tool, ToolSet
from openheim.tools.builtin import builtin_tools
from openheim.tools.compact import FIRST_TOOLS, CompactToolSet

if TYPE_CHECKING:
    from openheim.safety.staging import StagingArea


def select_tools(
    settings: Settings, patterns: Sequence[str] | None, extra: Sequence[Tool] = ()
) -> ToolSet:
    """The built-in tools plus ``extra`` (skills, memory), narrowed by ``--tools`` patterns.

    With ``file_changes = "staged"`` the model gets preview/apply tools instead of writing
    files directly."""
    tools = builtin_tools(allow_shell=settings.allow_shell)
    if settings.file_changes == "staged":
        tools = ToolSet(t for t in tools if t.name not in ("write_file", "edit_file"))
    for tool in extra:
        tools.add(tool)
    if patterns is None:
        return tools
    unmatched = tools.unmatched(patterns)
    if unmatched:
        raise ConfigError(
            f"--tools {','.join(unmatched)} matches no tool (available: {', '.join(tools.names)})",
            hint="use tool names or fnmatch patterns such as 'read_*,glob'",
        )
    return tools.select(patterns)


async def _mcp_tools(
    settings: Settings, stack: contextlib.AsyncExitStack, notices: list[Notice]
) -> list[Tool]:
    """The tools of the configured MCP servers (``server__tool``); each server that failed to
    start adds a notice."""
    if not settings.mcp_servers:
        return []
    from openheim.mcp import McpManager

    manager = await stack.enter_async_context(McpManager(settings.mcp_servers))
    notices.extend(
        Notice(f"MCP server {status.name!r} is unavailable: {status.error}", "warning", "mcp")
        for status in manager.status()
        if not status.connected
    )
    return list(manager.tools())


def _optional_tools(settings: Settings, area: StagingArea | None) -> list[Tool]:
    """Staging tools (``file_changes = "staged"``) and ``web_fetch``."""
    from openheim.safety.web_fetch import web_fetch_tool

    tools = [web_fetch_tool(allow_hosts=settings.web_fetch_allow)]
    if area is not None:
        from openheim.safety.staging import staging_tools

        tools += staging_tools(area)
    return tools


@dataclass(frozen=True)
class ToolRequest:
    """What the surface asked for: ``--tools`` patterns, a forced first choice, its own tools."""

    patterns: Sequence[str] | None = None
    tool_choice: ToolChoice = "auto"
    extra: Sequence[Tool] = ()


async def session_tools(
    settings: Settings,
    request: ToolRequest,
    stack: contextlib.AsyncExitStack,
    skills: SkillsManager,
    area: StagingArea | None,
    spawner: Spawner,
    profiles: Mapping[str, AgentProfile],
    profile: AgentProfile | None,
    notices: list[Notice],
    *,
    small: bool = False,
) -> ToolSet:
    """Built-in, skill, memory, staging, web, MCP, delegation and the caller's tools, narrowed
    by ``--tools`` and by a main profile's allow-list; MCP servers that failed add notices.

    For a ``small`` model, unless ``--tools`` or the profile chose the tools, the set offers
    the file tools, the caller's own and a tool ``--tool-choice`` names first, the rest through
    ``more_tools``."""
    memory = stack.enter_context(contextlib.closing(open_memory(settings)))
    extra = [load_skill_tool(skills), *memory_tools(memory, top_k=settings.memory.top_k)]
    extra += _optional_tools(settings, area)
    extra += await _mcp_tools(settings, stack, notices)
    others = {n: p for n, p in profiles.items() if profile is None or n != profile.name}
    delegate = _delegate_tool(settings, others, spawner)
    extra += [delegate] if delegate is not None else []
    tools = select_tools(settings, request.patterns, [*extra, *request.extra])
    if profile is not None and profile.tools is not None:
        tools = tools.select(profile.tools)
    choice = request.tool_choice
    if small and request.patterns is None and (profile is None or profile.tools is None):
        named = [choice.name] if isinstance(choice, NamedTool) else []
        first = (*FIRST_TOOLS, *(t.name for t in request.extra), *named)
        tools = CompactToolSet(tools, first=first)
    if isinstance(choice, NamedTool) and choice.name not in tools:
        raise ConfigError(
            f"--tool-choice {choice.name!r} is not an offered tool",
            hint=f"pick one of: {', '.join(tools.names)}",
        )
    return tools


def _delegate_tool(
    settings: Settings, profiles: Mapping[str, AgentProfile], spawner: Spawner
) -> Tool | None:
    """``delegate_task``, when there is anyone to delegate to."""
    if not profiles and not settings.inline_subagents:
        return None
    from openheim.agents.delegate import delegate_tool

    return delegate_tool(
        profiles,
        spawner,
        max_parallel=settings.max_parallel_subagents,
        allow_inline=settings.inline_subagents,
    )
