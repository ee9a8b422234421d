"""openheim: a fast, multi-provider LLM agent runtime.

Importing this package is cheap: public names are loaded on first attribute access. It changes
no other module: the start-up hooks of the ``openheim`` program (``openheim.process.codecache``,
``openheim.process.httpx_cli``) are installed by the program itself (``openheim.cli.main``), never
by
``import openheim`` in an application that hosts the library.
"""

from __future__ import annotations

import importlib

from openheim._version import __version__

TYPE_CHECKING = False  # not typing's: importing typing costs `openheim --version` 3 ms
if TYPE_CHECKING:
    from typing import Any

    from openheim.acp.server import serve_acp as serve_acp
    from openheim.api import AgentSession as AgentSession
    from openheim.api import OpenheimClient as OpenheimClient
    from openheim.api import PromptResult as PromptResult
    from openheim.api import PromptRun as PromptRun
    from openheim.api import Runtime as Runtime
    from openheim.api import Session as Session
    from openheim.approval import AllowAll as AllowAll
    from openheim.approval import ApprovalGate as ApprovalGate
    from openheim.approval import DenyAll as DenyAll
    from openheim.events import Event as Event
    from openheim.events import Finished as Finished
    from openheim.loop import Agent as Agent
    from openheim.loop import run_agent as run_agent
    from openheim.messages import Message as Message
    from openheim.tools.base import Tool as Tool
    from openheim.tools.base import ToolContext as ToolContext
    from openheim.tools.base import ToolKind as ToolKind
    from openheim.tools.base import ToolSet as ToolSet
    from openheim.tools.decorator import tool as tool

_LAZY = {
    "Runtime": "openheim.api",
    "OpenheimClient": "openheim.api",
    "AgentSession": "openheim.api",
    "PromptResult": "openheim.api",
    "PromptRun": "openheim.api",
    "Session": "openheim.api",
    "serve_acp": "openheim.acp.server",
    "Agent": "openheim.loop",
    "run_agent": "openheim.loop",
    "Message": "openheim.messages",
    "Event": "openheim.events",
    "Finished": "openheim.events",
    "ApprovalGate": "openheim.approval",
    "AllowAll": "openheim.approval",
    "DenyAll": "openheim.approval",
    "Tool": "openheim.tools.base",
    "ToolContext": "openheim.tools.base",
    "ToolKind": "openheim.tools.base",
    "ToolSet": "openheim.tools.base",
    "tool": "openheim.tools.decorator",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openheim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
