"""Shared helpers for the agent loop tests: a scripted run, its events, an echo tool."""

from __future__ import annotations

from typing import Any

from openheim.events import Event, Finished, ToolResult
from openheim.loop import Agent
from openheim.messages import Message
from openheim.testing import ScriptedProvider
from openheim.tools.base import ToolContext, ToolKind, ToolSet
from openheim.tools.decorator import tool
from tests.helpers import collect


def finished(events: list[Event]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    return last


def results(events: list[Event]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


@tool(read_only=True, kind=ToolKind.READ)
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


def make_agent(provider: ScriptedProvider, ctx: ToolContext, *tools: Any, **kw: Any) -> Agent:
    return Agent(provider, "test-model", tools=ToolSet(tools), context=ctx, **kw)


async def run(agent: Agent, prompt: str = "hi") -> tuple[list[Event], list[Message]]:
    history = [Message.user(prompt)]
    events = await collect(agent.run(history))
    return events, history
