"""Subagents: Markdown profiles of separate agents, and the ``delegate_task`` tool that runs them.

``load_profiles`` finds the profiles; ``delegate_tool`` offers them to the model; the runtime
implements ``Spawn`` (resolve a provider, open a child session) on top of ``run_subagent``.
Names load on first use, so a session without profiles never imports the delegation code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openheim.agents.delegate import DELEGATE_TASK as DELEGATE_TASK
    from openheim.agents.delegate import INLINE_NAME as INLINE_NAME
    from openheim.agents.delegate import DelegateTool as DelegateTool
    from openheim.agents.delegate import Spawn as Spawn
    from openheim.agents.delegate import SubagentRequest as SubagentRequest
    from openheim.agents.delegate import SubagentResult as SubagentResult
    from openheim.agents.delegate import child_agent as child_agent
    from openheim.agents.delegate import child_tools as child_tools
    from openheim.agents.delegate import delegate_tool as delegate_tool
    from openheim.agents.delegate import labelled_resolver as labelled_resolver
    from openheim.agents.delegate import run_subagent as run_subagent
    from openheim.agents.profiles import AgentProfile as AgentProfile
    from openheim.agents.profiles import ProfileSource as ProfileSource
    from openheim.agents.profiles import load_profiles as load_profiles

_DELEGATE = "openheim.agents.delegate"
_PROFILES = "openheim.agents.profiles"
_LAZY = {
    **dict.fromkeys(
        [
            "DELEGATE_TASK",
            "INLINE_NAME",
            "DelegateTool",
            "Spawn",
            "SubagentRequest",
            "SubagentResult",
            "child_agent",
            "child_tools",
            "delegate_tool",
            "labelled_resolver",
            "run_subagent",
        ],
        _DELEGATE,
    ),
    **dict.fromkeys(["AgentProfile", "ProfileSource", "load_profiles"], _PROFILES),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openheim.agents' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
