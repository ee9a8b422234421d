"""Subagents: Markdown profiles of separate agents, and the ``delegate_task`` tool that runs them.

``load_profiles`` finds the profiles; ``delegate_tool`` offers them to the model; the runtime
implements ``Spawn`` (resolve a provider, open a child session) on top of ``run_subagent``.
"""

from __future__ import annotations

from openheim.agents.delegate import (
    DELEGATE_TASK,
    INLINE_NAME,
    DelegateTool,
    Spawn,
    SubagentRequest,
    SubagentResult,
    child_agent,
    child_tools,
    delegate_tool,
    labelled_resolver,
    run_subagent,
)
from openheim.agents.profiles import AgentProfile, ProfileSource, load_profiles

__all__ = [
    "DELEGATE_TASK",
    "INLINE_NAME",
    "AgentProfile",
    "DelegateTool",
    "ProfileSource",
    "Spawn",
    "SubagentRequest",
    "SubagentResult",
    "child_agent",
    "child_tools",
    "delegate_tool",
    "labelled_resolver",
    "load_profiles",
    "run_subagent",
]
